"""What goes to a chat waits for its turn under Telegram's limits (docs/rate-limits.md): about
30 messages a second per bot (evenly spaced: the bot-wide limit is the strict one), about one
a second in a chat with short bursts (3 at once), 20 a minute in a group (3 at once).

``Requests`` (delivery.py), the request middleware, takes each attempt's ``turn`` here, so
every counted call is paced wherever it comes from (replies, previews, the activity message,
permission prompts, rejections), each attempt of it included (``Requests`` sends again after
a 429 and ``persistently`` after a network error). Telegram's 429 does
not say which limit was hit: it pauses the chat, and the pacer pauses the bot when several
chats are told so at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import Any

from aiogram.methods import TelegramMethod

from gateway.pacing import Pacer, Rate

from .settings import TelegramSettings

# The calls that put a message in a chat or change one: what Telegram's limits count. Chat
# actions, reactions and deletions are left out (no message appears); so are the bot's
# own settings (commands, webhook), which go to no chat.
COUNTED = frozenset(
    {
        "sendMessage", "sendMessageDraft", "editMessageText", "editMessageReplyMarkup",
        "sendPhoto", "sendDocument", "sendAudio", "sendVideo", "sendVoice", "sendAnimation",
        "sendMediaGroup", "sendSticker", "copyMessage", "forwardMessage",
    }
)  # fmt: skip


# The Bot FAQ: "We may allow short bursts that go over this limit": a reply in three
# messages goes at once; groups get the same short burst above their 20 a minute.
CHAT_BURST = 3
_AT_ONCE: AbstractAsyncContextManager[None] = nullcontext()  # reusable: it keeps no state


class TelegramPacing:
    def __init__(self, pacer: Pacer, settings: TelegramSettings) -> None:
        self.pacer = pacer
        self.private = Rate(settings.telegram_rate_private, 1.0, CHAT_BURST)
        self.group = Rate(settings.telegram_rate_group, 60.0, CHAT_BURST)

    def rate(self, chat_id: int | str) -> Rate:
        """Groups and channels (negative ids, or an @username) have the per-group limit."""
        return self.private if isinstance(chat_id, int) and chat_id > 0 else self.group

    def turn(self, method: TelegramMethod[Any]) -> AbstractAsyncContextManager[None]:
        """Around one attempt of a call: a counted call waits for its chat's turn, its tokens
        counted once answered; any other call goes at once.
        """
        chat = _chat(method)
        if chat is None:
            return _AT_ONCE
        return self.pacer.call(str(chat), self.rate(chat))

    @asynccontextmanager
    async def slot(self, chat_id: int) -> AsyncIterator[None]:
        """A preview's slot, taken before its text is made (see ``Pacer.slot``)."""
        async with self.pacer.slot(str(chat_id), self.rate(chat_id)):
            yield

    def flooded(self, method: TelegramMethod[Any], seconds: float) -> bool:
        """A 429 for ``method``: True when its chat is paused (its next attempt waits in
        ``turn``), False when the call is not paced (the caller waits itself).
        """
        chat = _chat(method)
        if chat is None:
            return False
        self.pacer.pause(str(chat), seconds)
        return True


def _chat(method: TelegramMethod[Any]) -> int | str | None:
    """The chat a counted call goes to; None for a call that is not paced."""
    if method.__api_method__ not in COUNTED:
        return None
    chat = getattr(method, "chat_id", None)
    return chat if isinstance(chat, (int, str)) else None
