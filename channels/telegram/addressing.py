"""Whether a message is for the bot: who the bot is (known once getMe answers), whether a
group message addresses it, and the bot's own leading mention taken off the text.
"""

from __future__ import annotations

import re
from typing import Literal

from aiogram.types import Message, MessageEntity, User

from contract import utf16_len


class Addressing:
    def __init__(self, group_text: Literal["mention", "all"]) -> None:
        self.group_text = group_text
        self.me: User | None = None  # the bot, once getMe has answered
        self._mention: re.Pattern[str] | None = None

    def know(self, me: User) -> None:
        """The bot's identity, from getMe."""
        self.me = me
        username = me.username or ""
        self._mention = re.compile(rf"\s*@{re.escape(username)}(?![A-Za-z0-9_])[,:]?\s*", re.I)

    def from_a_person(self, message: Message) -> bool:
        """Sent by a person other than the bot (and the bot knows who it is)."""
        me = self.me
        user = message.from_user
        return me is not None and user is not None and not user.is_bot and user.id != me.id

    def addressed(self, message: Message, text: str) -> bool:
        """In groups: commands always; other text when the bot is mentioned or replied to
        (or always, with ``telegram_group_text = "all"``).
        """
        if self.group_text == "all":
            return True
        assert self.me is not None
        entities = message.entities if message.text is not None else message.caption_entities
        start = utf16_len(text[: len(text) - len(text.lstrip())])
        for entity in entities or ():
            if entity.type == "bot_command" and entity.offset == start:
                return True
            if self._mentions_me(entity, text):
                return True
        replied = message.reply_to_message
        return bool(
            replied is not None
            and replied.forum_topic_created is None  # topic messages "reply" to the topic's root
            and replied.from_user is not None
            and replied.from_user.id == self.me.id
        )

    def _mentions_me(self, entity: MessageEntity, text: str) -> bool:
        assert self.me is not None
        if entity.type == "text_mention":
            return entity.user is not None and entity.user.id == self.me.id
        if entity.type == "mention" and self.me.username:
            return entity.extract_from(text).lower() == f"@{self.me.username.lower()}"
        return False

    def strip_mention(self, text: str) -> str:
        """The bot's own leading mention is the channel's business, not the input's."""
        if self._mention is None or not self.me or not self.me.username:
            return text
        match = self._mention.match(text)
        return text[match.end() :] if match else text
