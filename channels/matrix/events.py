"""What the channel reads from a room event's JSON: its text, where it was written (thread,
reply), whether it is something the bot takes in at all, and what a redaction or an edit
changes.
"""

from __future__ import annotations

import re
from typing import Any

TEXT_TYPES = ("m.text",)
FILE_TYPES = ("m.image", "m.file", "m.audio", "m.video")
# The first line of a reply's fallback: "> <@alice:example.org> ...", an emote's "> * <@...".
_FALLBACK = re.compile(r"> (?:\* )?<@[^\s>:]+:[^\s>]+>")


def content_of(event: dict[str, Any]) -> dict[str, Any]:
    content = event.get("content")
    return content if isinstance(content, dict) else {}


def relation(content: dict[str, Any]) -> dict[str, Any]:
    related = content.get("m.relates_to")
    return related if isinstance(related, dict) else {}


def is_input(event: dict[str, Any]) -> bool:
    """A message a person typed or a file they sent: not an edit, not a bot's notice."""
    content = content_of(event)
    if event.get("type") != "m.room.message" or relation(content).get("rel_type") == "m.replace":
        return False
    return content.get("msgtype") in TEXT_TYPES + FILE_TYPES


def thread_of(content: dict[str, Any]) -> str | None:
    related = relation(content)
    root = related.get("event_id")
    return root if related.get("rel_type") == "m.thread" and isinstance(root, str) else None


def replying_to(content: dict[str, Any]) -> str | None:
    reply = relation(content).get("m.in_reply_to")
    target = reply.get("event_id") if isinstance(reply, dict) else None
    return target if isinstance(target, str) else None


def mentioned(content: dict[str, Any]) -> list[str]:
    """The users ``m.mentions`` names (none when it is absent or of another shape)."""
    mentions = content.get("m.mentions")
    users = mentions.get("user_ids") if isinstance(mentions, dict) else None
    return [u for u in users if isinstance(u, str)] if isinstance(users, list) else []


def text_of(content: dict[str, Any]) -> str:
    """The text typed: a file's caption (its body, when a filename is given apart), a
    message's body without the quoted fallback older clients put before a reply (the spec's
    until v1.13: the replied-to message's lines, the first after its sender's id, each
    after "> ", then a blank line). A quote of any other form is the person's own text.
    """
    body = content.get("body")
    body = body if isinstance(body, str) else ""
    if content.get("msgtype") in FILE_TYPES:
        name = content.get("filename")
        return body if isinstance(name, str) and name != body else ""
    if replying_to(content) is None or not _FALLBACK.match(body):
        return body
    lines = body.split("\n")
    end = next((i for i, line in enumerate(lines) if not line.startswith(">")), len(lines))
    # The quote ends in a blank line before the reply's text; else the person quoted.
    return "\n".join(lines[end + 1 :]) if end < len(lines) and not lines[end] else body


def redacted(event: dict[str, Any]) -> str | None:
    """The event a redaction takes away: ``redacts`` at the top, or in its content (room
    version 11).
    """
    if event.get("type") != "m.room.redaction":
        return None
    target = event.get("redacts", content_of(event).get("redacts"))
    return target if isinstance(target, str) else None


def edit_of(event: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The message an edit (``m.replace``) replaces, and its new content (a message the bot
    takes in); None for any other event.
    """
    content = content_of(event)
    related = relation(content)
    original, new = related.get("event_id"), content.get("m.new_content")
    if (
        event.get("type") != "m.room.message"
        or related.get("rel_type") != "m.replace"
        or not isinstance(original, str)
        or not isinstance(new, dict)
        or new.get("msgtype") not in TEXT_TYPES + FILE_TYPES
    ):
        return None
    return original, new


def replacement(
    edit: dict[str, Any], original: str, new: dict[str, Any], thread: str | None
) -> dict[str, Any]:
    """The message an edit makes: the original's id (what the person sees, and what a later
    edit or redaction names) with the new content, in the original's thread; the edit's
    sender and time.
    """
    content = {k: v for k, v in new.items() if k != "m.relates_to"}
    if thread is not None:
        content["m.relates_to"] = {"rel_type": "m.thread", "event_id": thread}
    return {
        "type": "m.room.message",
        "event_id": original,
        "sender": edit.get("sender"),
        "origin_server_ts": edit.get("origin_server_ts"),
        "content": content,
    }
