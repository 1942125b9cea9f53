"""Whether a room message is for the bot, and its text without the bot's leading mention.

In a room of the bot and one person every message is; elsewhere a message is when it
mentions the bot: ``m.mentions`` names it (what current clients send with a pill), or it
starts with a pill to the bot (``formatted_body``), or, from clients older than
``m.mentions``, with the bot's name and a colon as their plain text writes a pill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

_PILL = re.compile(r'\s*<a\s+href="https://matrix\.to/#/([^"?]+)[^"]*"\s*>(.*?)</a>[:,]?\s*', re.S)


@dataclass
class Addressing:
    user_id: str
    names: set[str] = field(default_factory=set)  # the bot's display names, as rooms show them

    @property
    def localpart(self) -> str:
        return self.user_id[1:].partition(":")[0]

    def addressed(self, content: dict[str, Any], text: str) -> bool:
        mentions = content.get("m.mentions")
        if isinstance(mentions, dict):
            users = mentions.get("user_ids")
            if isinstance(users, list) and self.user_id in users:
                return True
        pill = self._pill(content)
        if pill is not None:
            return pill
        return self._named_at_start(text) is not None

    def strip_mention(self, text: str) -> str:
        """The text with a leading mention of the bot taken off (and what followed it: a
        colon, a comma, white space); otherwise the text exactly as sent.
        """
        end = self._named_at_start(text)
        return text if end is None else text[end:]

    def _pill(self, content: dict[str, Any]) -> bool | None:
        """True: the formatted text starts with a pill to the bot; False: to someone else;
        None: no pill at its start.
        """
        formatted = content.get("formatted_body")
        if content.get("format") != "org.matrix.custom.html" or not isinstance(formatted, str):
            return None
        match = _PILL.match(formatted)
        return None if match is None else unquote(match.group(1)) == self.user_id

    def _named_at_start(self, text: str) -> int | None:
        """Where the text after a leading ``name:`` (or ``name,``, or the user id and white
        space) addressed to the bot starts; None when it does not start so.
        """
        stripped = text.lstrip()
        skipped = len(text) - len(stripped)
        for name in sorted({self.user_id, self.localpart, *self.names}, key=len, reverse=True):
            if not name or not stripped[: len(name)].casefold() == name.casefold():
                continue
            rest = stripped[len(name) :]
            if rest[:1] in (":", ","):
                rest = rest[1:]
            elif name != self.user_id or (rest and not rest[0].isspace()):
                continue
            return skipped + len(stripped) - len(rest.lstrip())
        return None
