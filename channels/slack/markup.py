"""Inbound text: Slack's message markup decoded into what the user typed.

Slack escapes ``&``, ``<`` and ``>`` as entities and wraps mentions, channels and links in
``<...>``. The contract must see plain text, so this runs before the core does anything.
"""

from __future__ import annotations

import re

_MARKUP = re.compile(r"<([^<>]*)>")
_SCHEMES = ("https://", "http://", "mailto:", "tel:")
_BROADCASTS = {"here", "channel", "everyone"}


def unescape(text: str) -> str:
    """Slack's three entities; ``&amp;`` last so that ``&amp;lt;`` stays ``&lt;``."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _link(inner: str) -> str:
    url, _, label = (unescape(part) for part in inner.partition("|"))
    if not label:
        return url
    bare = next((url[len(s) :] for s in _SCHEMES if url.startswith(s)), url)
    # Slack auto-links what looks like a domain (``app.py``): give back what was typed.
    if label in (url, bare):
        return label
    return f"{label} ({url})"


def _decode(match: re.Match[str]) -> str:
    inner = match.group(1)
    head, _, label = inner.partition("|")
    label = unescape(label)
    if head.startswith("@"):  # <@U123> or <@U123|alice>
        return "@" + (label or head[1:])
    if head.startswith("#"):  # <#C123|general>
        return "#" + (label or head[1:])
    if head.startswith("!"):  # <!here>, <!subteam^S1|@team>, <!date^...|fallback>
        special = head[1:]
        if special in _BROADCASTS:
            return "@" + special
        if special.startswith("subteam^"):
            return label or "@" + special.partition("^")[2]
        return label or ("" if special.startswith("date^") else "@" + special)
    return _link(inner)


def decode(text: str) -> str:
    """Slack markup to plain text: ``<@U1|ann> &lt;3`` -> ``@ann <3``."""
    out: list[str] = []
    pos = 0
    for match in _MARKUP.finditer(text):
        out.append(unescape(text[pos : match.start()]))
        out.append(_decode(match))
        pos = match.end()
    out.append(unescape(text[pos:]))
    return "".join(out)


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """Remove the bot's own leading mention and the one space that separates it."""
    if not bot_user_id:
        return text
    mention = re.match(rf"\s*<@{re.escape(bot_user_id)}(?:\|[^>]*)?>\s?", text)
    return text[mention.end() :] if mention else text


def normalize(text: str, bot_user_id: str | None = None) -> str:
    """What the contract sees for a message or a slash command's text."""
    return decode(strip_mention(text, bot_user_id))


def umbrella_source(text: str) -> str:
    """``/agent deploy prod`` -> ``/deploy prod``; ``/agent /deploy`` is accepted as well."""
    return text if text.startswith("/") else "/" + text


def command_source(command: str, text: str) -> str:
    """A per-command registration: ``/deploy`` with text ``prod`` -> ``/deploy prod``."""
    return f"{command} {text}" if text else command


def command_texts(command: str, text: str, umbrella: str) -> tuple[str, str]:
    """A slash command's source for the contract (its text normalized; ``umbrella``: the
    command that runs the one named in its text) and its invocation as typed.
    """
    normalized = normalize(text)
    if command == umbrella:
        source = umbrella_source(normalized)
    else:
        source = command_source(command, normalized)
    return source, command_source(command, text.strip())
