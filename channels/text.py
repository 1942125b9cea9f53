"""Rendered text cut under a platform's limit on a message, counted in UTF-16 units (never
less than the platforms' own counts): Slack's mrkdwn and Discord's Markdown. A cut falls at a
paragraph, a line or a word where it can, never inside ``<...>`` (a Slack link, a Discord
mention) or an HTML entity (Slack's escapes); a code fence open at a cut is closed there and
opened again in the next piece.
"""

from __future__ import annotations

from contract import utf16_prefix

FENCE = "```"
MIN_LIMIT = 16
"""The smallest limit ``chunks`` cuts to: a chunk inside a code block spends 8 units on the
fences that close and reopen it, and must still carry some of the text."""


def _split_point(text: str, room: int) -> tuple[int, int]:
    """(end of this chunk, start of the next): at a paragraph, line or word if possible; never
    inside a link or an entity that fits in half the room.
    """
    end = utf16_prefix(text, room)
    # Never cut a chunk to less than half its room, nor to no more than a reopened fence:
    # each cut then takes more of the text than a reopened fence adds back.
    floor = max(end // 2, len(FENCE) + 2)
    # A cut inside ``<url|label>`` breaks the link in both chunks: cut before it instead.
    opening = text.rfind("<", floor, end)
    if opening > 0 and text.rfind(">", opening, end) < 0:
        end = opening
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, floor, end)
        if at > 0:
            return at, at + len(separator)
    # A hard cut must not split an entity such as ``&amp;``.
    amp = text.rfind("&", max(floor, end - 5), end)
    if amp > 0 and ";" not in text[amp:end]:
        end = amp
    return end, end


def chunks(text: str, limit: int) -> list[str]:
    """Cut rendered text into messages of at most ``limit`` UTF-16 units; code fences are
    closed at the end of a chunk and reopened at the start of the next one. A limit below
    ``MIN_LIMIT`` leaves no room to cut to and raises ValueError: a caller reserves room
    (the invocation line is kept short for that), it never asks for less.
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"a chunk limit of {limit} is below the minimum of {MIN_LIMIT}")
    out: list[str] = []
    rest = text
    while utf16_prefix(rest, limit) < len(rest):
        end, start = _split_point(rest, limit - len(FENCE) - 1)
        head, rest = rest[:end], rest[start:]
        if head.count(FENCE) % 2:
            head, rest = f"{head}\n{FENCE}", f"{FENCE}\n{rest}"
        out.append(head)
    if rest or not out:
        out.append(rest)
    return out


def shorten(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` UTF-16 units, else its first chunk and `` …`` in that
    room. Raises ValueError for a limit below ``MIN_LIMIT + 2``, as ``chunks`` does.
    """
    if limit - 2 < MIN_LIMIT:
        raise ValueError(f"a limit of {limit} leaves no room to shorten text to")
    if utf16_prefix(text, limit) == len(text):
        return text
    # The first chunk is cut within its room: a prefix of ``limit`` characters decides it.
    return chunks(text[:limit], limit - 2)[0] + " …"
