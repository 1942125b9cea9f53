"""A plain Discord message read as the contract reads input: for the bot when it is a direct
message or mentions the bot in a guild; its text without the bot's leading mention, its files.
Messages of bots (this one included), webhooks and Discord itself are not for it.

What is read is what the journal keeps: the input runs again from it after a restart.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import hikari

from .files import DiscordFile, discord_file

# Messages a person types; the others (joins, pins, boosts) have no text for the agent.
SPOKEN = frozenset({hikari.MessageType.DEFAULT, hikari.MessageType.REPLY})


@dataclass(frozen=True, slots=True)
class Said:
    message_id: str
    conversation: str  # the Discord channel (a DM's channel too)
    user: str
    guild: str | None  # None in a direct message
    text: str
    files: tuple[DiscordFile, ...]

    def body(self) -> dict[str, Any]:
        """What the journal keeps."""
        return {"message": dataclasses.asdict(self)}

    @classmethod
    def of(cls, body: dict[str, Any]) -> Said:
        """Read back from the journal (``body``)."""
        said = dict(body["message"])
        files = tuple(DiscordFile(**f) for f in said.pop("files"))
        return cls(**said, files=files)


def mention(me: int) -> re.Pattern[str]:
    """The bot's mention at the start of a text, with what separates it from the rest."""
    return re.compile(rf"\s*<@!?{me}>[,:]?\s*")


def said(message: hikari.Message, me: int) -> Said | None:
    """The message as input, or None when it is not for the bot or says nothing."""
    if message.author.is_bot or message.webhook_id is not None or message.type not in SPOKEN:
        return None
    if message.guild_id is not None and me not in (message.user_mentions_ids or ()):
        return None
    # hikari passes the payload's content on unchecked: anything but a string is no text.
    text = message.content if isinstance(message.content, str) else ""
    found = mention(me).match(text)
    if found is not None:
        text = text[found.end() :]
    files = tuple(
        f
        for f in (
            discord_file(
                {
                    "url": a.url,
                    "filename": a.filename,
                    "size": a.size,
                    "content_type": a.media_type,
                },
                index,
            )
            for index, a in enumerate(message.attachments, 1)
        )
        if f is not None
    )
    if not text and not files:
        return None
    return Said(
        message_id=str(message.id),
        conversation=str(message.channel_id),
        user=str(message.author.id),
        guild=str(message.guild_id) if message.guild_id is not None else None,
        text=text,
        files=files,
    )
