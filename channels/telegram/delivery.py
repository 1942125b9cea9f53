"""Talking to the Bot API the way Telegram wants: keep the token out of errors, wait out 429s,
retry what must arrive after a network error, a 5xx or an answer that is not JSON, fall back
to plain text when the entities are refused, treat "message is not modified" as done, pace
edits per chat.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

from aiogram import Bot
from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import (
    AiogramError,
    ClientDecodeError,
    DetailedAiogramError,
    TelegramBadRequest,
    TelegramEntityTooLarge,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import TelegramMethod
from aiogram.methods.base import TelegramType
from aiogram.types import InlineKeyboardMarkup, Message, ReplyParameters

from gateway.api import Meter
from gateway.backoff import Backoff, retrying
from gateway.store import BoundedTTLMap

from .pacing import TelegramPacing
from .render import Chunk

log = logging.getLogger("slashgate.telegram")

HTML = "HTML"
RETRY = Backoff()  # for what must arrive: network errors, 5xx, answers that are not JSON
FLOOD_WAITS = 5  # flood control waited out at most this many times for one request
PLATFORM = "telegram"

T = TypeVar("T")


class Requests(BaseRequestMiddleware):
    """What every Bot API request gets, each attempt of it: its turn under Telegram's limits
    (``TelegramPacing.turn``: every counted call is paced wherever it comes from), and its
    count in the gateway's metrics by method and outcome. Flood control (429) says how long
    to wait: wait that long (the pacing pauses the chat for a paced call) and send again, up
    to FLOOD_WAITS times for one request. Any other error leaves
    without the token: it is part of every request URL, and aiohttp's errors quote the URL
    (aiogram copies their text into TelegramNetworkError), so it is taken out before anything
    logs the error, aiogram's polling loop included.
    """

    def __init__(self, pacing: TelegramPacing, metrics: Meter) -> None:
        self.pacing = pacing
        self.metrics = metrics

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Any:
        name = method.__api_method__
        waits = 0
        while True:
            try:
                async with self.pacing.turn(method):
                    try:
                        result = await make_request(bot, method)
                    except AiogramError as exc:
                        self.metrics.platform_request(PLATFORM, name, _outcome(exc))
                        if isinstance(exc, TelegramRetryAfter):  # waited out below
                            self.metrics.platform_retry(PLATFORM, name, "rate_limited")
                        raise
                    self.metrics.platform_request(PLATFORM, name, "ok")
                    return result
            except TelegramRetryAfter as exc:
                waits += 1
                if waits > FLOOD_WAITS:
                    raise
                log.warning("Telegram flood control on %s: retrying in %d s", name, exc.retry_after)
                if not self.pacing.flooded(method, exc.retry_after):
                    await asyncio.sleep(exc.retry_after)
            except AiogramError as exc:
                _redact(exc, (bot.token, quote(bot.token, safe="")))
                raise


def _outcome(exc: AiogramError) -> str:
    if isinstance(exc, TelegramRetryAfter):
        return "rate_limited"
    if isinstance(exc, (TelegramServerError, ClientDecodeError)):
        return "server_error"
    if isinstance(exc, TelegramNetworkError):
        return "network_error"
    return "client_error"


def _redact(exc: AiogramError, secrets: tuple[str, ...]) -> None:
    def clean(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, "<token>")
        return text

    if isinstance(exc, (DetailedAiogramError, ClientDecodeError)):
        exc.message = clean(exc.message)
    if isinstance(exc, ClientDecodeError):  # what a wrong server answered may echo the URL
        if any(secret in str(exc.data) for secret in secrets):
            exc.data = clean(str(exc.data))
        if any(secret in str(exc.original) for secret in secrets):
            exc.original = ValueError(clean(str(exc.original)))
    if exc.__cause__ is not None or exc.__context__ is not None:
        shown = "".join(traceback.format_exception(exc))  # as a logged traceback would be
        if any(secret in shown for secret in secrets):
            # The original errors (aiohttp's, with the URL) go; the message says what it was.
            exc.__cause__ = None
            exc.__suppress_context__ = True


def transient(exc: Exception) -> str | None:
    """What went wrong, when another attempt may cure it: a network error (refused, reset,
    closed mid-answer, timed out), a 5xx, or an answer that is not the Bot API's JSON (a
    proxy's HTML error page, whatever its status). None for anything else.
    """
    if isinstance(exc, TelegramEntityTooLarge):
        return None
    if isinstance(exc, (TelegramNetworkError, TelegramServerError)):
        return f"{exc.method.__api_method__} failed ({exc.message})"
    if isinstance(exc, ClientDecodeError):
        return f"a Bot API call failed ({describe(exc)})"
    return None


def describe(exc: AiogramError) -> str:
    """One line for the log (the token is already out: see ``Requests``)."""
    if isinstance(exc, DetailedAiogramError):
        return exc.message[:300]
    if isinstance(exc, ClientDecodeError):
        return "the answer is not the Bot API's JSON"
    return type(exc).__name__


async def persistently(send: Callable[[], Awaitable[T]]) -> T:
    """Call ``send``; after a transient failure, call it again within the bounds of ``RETRY``.
    For what the user must get. A network error after the request went out can hide a
    request that went through: Telegram has no idempotency key, and a repeated message beats
    a missing one (docs/internals/decisions.md).
    """
    return await retrying(send, transient, RETRY)


@dataclass(slots=True)
class _Line:
    """The callers waiting for one key's next slot, served in order."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0


class Throttle:
    """At most one call per ``interval`` per key (a chat), in the order asked. A caller that
    leaves while it waits (a preview stopped for the final text) takes no slot: the next in
    line gets it, instead of an interval later.
    """

    def __init__(self, interval: float, size: int = 10_000) -> None:
        self.interval = interval
        self._last: BoundedTTLMap[float] = BoundedTTLMap(size, max(interval, 1.0) * 60)
        self._lines: dict[str, _Line] = {}  # only while someone waits

    async def wait(self, key: str) -> None:
        line = self._lines.setdefault(key, _Line())
        line.waiting += 1
        try:
            async with line.lock:
                loop = asyncio.get_running_loop()
                last = self._last.get(key)
                if last is not None and last + self.interval > loop.time():
                    await asyncio.sleep(last + self.interval - loop.time())
                self._last.set(key, loop.time())
        finally:
            line.waiting -= 1
            if not line.waiting:
                del self._lines[key]


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reply goes: the chat, its forum topic, and the message it answers."""

    chat_id: int
    thread_id: int | None = None
    reply_to: int | None = None  # answered message, quoted in groups
    private: bool = False
    # The core's conversation id: the chat, plus the topic in forum supergroups. Made with
    # the target: the intake and the updates each read it.
    conversation: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        chat = str(self.chat_id)
        conversation = chat if self.thread_id is None else f"{chat}:{self.thread_id}"
        object.__setattr__(self, "conversation", conversation)  # frozen: set once, here

    @classmethod
    def of(cls, message: Message) -> Target:
        """Where the reply to ``message`` goes."""
        thread = message.message_thread_id if message.is_topic_message else None
        return cls(message.chat.id, thread, message.message_id, message.chat.type == "private")


def entities_refused(exc: TelegramBadRequest) -> bool:
    return "can't parse entities" in exc.message.lower()


def not_modified(exc: TelegramBadRequest) -> bool:
    return "message is not modified" in exc.message.lower()


async def send_chunk(
    bot: Bot,
    target: Target,
    chunk: Chunk,
    *,
    quote: bool = False,
    markup: InlineKeyboardMarkup | None = None,
) -> Message:
    """Send one chunk as HTML; as plain text if Telegram refuses the entities. ``quote``
    replies to the answered message (in groups, where it says whom the bot answers).
    """
    reply = None
    if quote and target.reply_to is not None and not target.private:
        reply = ReplyParameters(message_id=target.reply_to, allow_sending_without_reply=True)
    common: dict[str, Any] = {
        "chat_id": target.chat_id,
        "message_thread_id": target.thread_id,
        "reply_parameters": reply,
        "reply_markup": markup,
    }
    try:
        return await bot.send_message(text=chunk.html, parse_mode=HTML, **common)
    except TelegramBadRequest as exc:
        if not entities_refused(exc):
            raise
        log.warning("Telegram refused the HTML (%s); sending plain text", exc.message)
        return await bot.send_message(text=chunk.plain, parse_mode=None, **common)


async def edit_chunk(
    bot: Bot,
    target: Target,
    message_id: int,
    chunk: Chunk,
    markup: InlineKeyboardMarkup | None = None,
) -> None:
    """Replace a message's text; an unchanged text is not an error."""
    common: dict[str, Any] = {
        "chat_id": target.chat_id,
        "message_id": message_id,
        "reply_markup": markup,
    }
    try:
        await bot.edit_message_text(text=chunk.html, parse_mode=HTML, **common)
    except TelegramBadRequest as exc:
        if not_modified(exc):
            return
        if not entities_refused(exc):
            raise
        log.warning("Telegram refused the HTML (%s); editing as plain text", exc.message)
        try:
            await bot.edit_message_text(text=chunk.plain, parse_mode=None, **common)
        except TelegramBadRequest as again:
            if not not_modified(again):
                raise
