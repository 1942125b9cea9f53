"""Permission requests from the runtime as inline keyboards; the choice goes back to it.

Callback data is limited to 64 bytes, so a button carries a short random token and the
option's index; the token maps to the request in a bounded window. Only the person whose
input raised the request may answer it; a stale button gets a polite answer.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from dataclasses import dataclass
from functools import partial

from aiogram import Bot
from aiogram.exceptions import TelegramBadRequest
from aiogram.types import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message

from gateway.api import GatewayAPI, PermissionRequired
from gateway.store import BoundedTTLMap

from .delivery import Target, edit_chunk, persistently, send_chunk
from .render import Chunk, escape

log = logging.getLogger("slashgate.telegram")

PREFIX = "perm"
STALE = "This request is no longer pending."
NOT_YOURS = "Only the person who sent the request can answer it."
MAX_TITLE = 3000
MAX_BUTTON = 64


@dataclass(frozen=True, slots=True)
class _Pending:
    target: Target
    user_id: int
    request: PermissionRequired
    prompt: Chunk


def _prompt(request: PermissionRequired) -> Chunk:
    title = request.title[:MAX_TITLE]
    return Chunk(f"🔐 <b>Permission needed</b>\n{escape(title)}", f"🔐 Permission needed\n{title}")


class Permissions:
    def __init__(self, bot: Bot, gateway: GatewayAPI, channel: str, size: int = 1_000) -> None:
        self.bot = bot
        self.gateway = gateway
        self.channel = channel
        self._pending: BoundedTTLMap[_Pending] = BoundedTTLMap(size, 24 * 3600)

    async def ask(self, target: Target, user_id: int, request: PermissionRequired) -> None:
        token = secrets.token_urlsafe(9)
        prompt = _prompt(request)
        self._pending.set(token, _Pending(target, user_id, request, prompt))
        keyboard = InlineKeyboardMarkup(
            inline_keyboard=[
                [
                    InlineKeyboardButton(
                        text=option.name[:MAX_BUTTON] or option.option_id[:MAX_BUTTON],
                        callback_data=f"{PREFIX}:{token}:{i}",
                    )
                ]
                for i, option in enumerate(request.options)
            ]
        )
        await persistently(
            partial(send_chunk, self.bot, target, prompt, quote=True, markup=keyboard)
        )

    @staticmethod
    def handles(query: CallbackQuery) -> bool:
        return (query.data or "").startswith(f"{PREFIX}:")

    async def answer(self, query: CallbackQuery) -> None:
        _, _, rest = (query.data or "").partition(":")
        token, _, index = rest.partition(":")
        pending = self._pending.get(token)
        if pending is None or not index.isdigit() or int(index) >= len(pending.request.options):
            await self.bot.answer_callback_query(query.id, text=STALE)
            await self._drop_keyboard(query)
            return
        if query.from_user.id != pending.user_id:
            await self.bot.answer_callback_query(query.id, text=NOT_YOURS)
            return
        option = pending.request.options[int(index)]
        self._pending.pop(token)
        answered = await self.gateway.answer_permission(
            self.channel, pending.target.conversation, pending.request.request_id, option.option_id
        )
        await self.bot.answer_callback_query(query.id, text=option.name if answered else STALE)
        outcome = f"→ {option.name}" if answered else STALE
        prompt = pending.prompt
        done = Chunk(f"{prompt.html}\n\n{escape(outcome)}", f"{prompt.plain}\n\n{outcome}")
        if isinstance(query.message, Message):
            await edit_chunk(self.bot, pending.target, query.message.message_id, done)

    async def _drop_keyboard(self, query: CallbackQuery) -> None:
        message = query.message
        if message is None:
            return
        with contextlib.suppress(TelegramBadRequest):  # already gone or already plain
            await self.bot.edit_message_reply_markup(
                chat_id=message.chat.id, message_id=message.message_id, reply_markup=None
            )
