"""Whether a room message is for the bot, and its text without the bot's leading mention.

In a room of the bot and one person every message is; elsewhere a message is when it
mentions the bot: ``m.mentions`` names it (what current clients send with a pill), or it
starts with a pill to the bot (``formatted_body``), or, from clients older than
``m.mentions``, with the bot's name and a colon as their plain text writes a pill.

The bot's name is the one the room shows (``shown``: its display name there, as its member
event in the room says), and a pill's own text: the name the sender's client wrote, which is
the bot's new one at once when it was renamed (its homeserver does not send the bot its own
events, see ``sync``).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .events import mentioned

# The id, then at most a query ("?via=..."): no two parts of the pattern take the same
# characters, so a crafted unclosed link is read once, not backtracked over (quadratic).
_PILL = re.compile(
    r'\s*<a\s+href="https://matrix\.to/#/([^"?]+)(?:\?[^"]*)?"\s*>(.*?)</a>[:,]?\s*', re.S
)
PILL_WITHIN = 4_096  # characters of the formatted text a leading pill is looked for in


@dataclass
class Addressing:
    user_id: str

    @property
    def localpart(self) -> str:
        return self.user_id[1:].partition(":")[0]

    def addressed(self, content: dict[str, Any], text: str, shown: str | None) -> bool:
        if self.user_id in mentioned(content):
            return True
        pill = self._pill(content)
        if pill is not None:
            return pill[0] == self.user_id
        return self._named_at_start(text, {shown}) is not None

    def strip_mention(self, content: dict[str, Any], text: str, shown: str | None) -> str:
        """The text with a leading mention of the bot taken off (and what followed it: a
        colon, a comma, white space); otherwise the text exactly as sent.
        """
        pill = self._pill(content)
        written = pill[1] if pill is not None and pill[0] == self.user_id else None
        end = self._named_at_start(text, {shown, written})
        return text if end is None else text[end:]

    def _pill(self, content: dict[str, Any]) -> tuple[str, str] | None:
        """(whom, its text) of the pill the formatted text starts with; None: no pill at its
        start.
        """
        formatted = content.get("formatted_body")
        if content.get("format") != "org.matrix.custom.html" or not isinstance(formatted, str):
            return None
        match = _PILL.match(formatted[:PILL_WITHIN])
        if match is None:
            return None
        return unquote(match.group(1)), html.unescape(match.group(2)).strip()

    def _named_at_start(self, text: str, names: set[str | None]) -> int | None:
        """Where the text after a leading ``name:`` (or ``name,``, or the user id and white
        space) addressed to the bot starts, ``names`` being the bot's besides its user id and
        localpart; None when it does not start so.
        """
        stripped = text.lstrip()
        skipped = len(text) - len(stripped)
        known = {self.user_id, self.localpart, *(n for n in names if n)}
        for name in sorted(known, key=len, reverse=True):
            if not stripped[: len(name)].casefold() == name.casefold():
                continue
            rest = stripped[len(name) :]
            if rest[:1] in (":", ","):
                rest = rest[1:]
            elif name != self.user_id or (rest and not rest[0].isspace()):
                continue
            return skipped + len(stripped) - len(rest.lstrip())
        return None
