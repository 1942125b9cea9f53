"""A reply as Discord messages: Discord renders Markdown itself (bold, italics, strike, code,
fences, quotes, lists, headings, masked links), so the text goes as it is, cut at 2,000
characters after rendering with code fences closed and reopened (channels/text.py, which
counts UTF-16 units: never more than Discord's count).
"""

from __future__ import annotations

import dataclasses

from channels.activity import with_usage
from channels.text import chunks, shorten
from gateway.api import Reply

LIMIT = 2000  # characters of a message's content
MAX_FOLLOW_UPS = 5  # messages after the first: a reply longer than that is cut, and says so
CUT = "\n\n_(the reply was longer than Discord shows; it was cut here)_"


def messages(reply: Reply) -> list[str]:
    """The reply (with its usage line) as messages of at most ``LIMIT`` characters."""
    if reply.usage is not None:
        reply = dataclasses.replace(reply, text=with_usage(reply.text, reply.usage))
    parts = chunks(reply.text or "_(empty reply)_", LIMIT)
    if len(parts) > MAX_FOLLOW_UPS + 1:
        parts = [*parts[:MAX_FOLLOW_UPS], shorten(parts[MAX_FOLLOW_UPS], LIMIT - len(CUT)) + CUT]
    return parts


def preview(text: str) -> str:
    """What a streamed reply shows so far: its start, within one message."""
    return shorten(text, LIMIT)
