"""How one input's reply appears in Telegram: typing, a streamed preview, the final message.

Typing shows once a reply takes longer than TYPING_DELAY (an instant reply costs no
sendChatAction). Private chats stream with sendMessageDraft (sent again while the run
lasts: Telegram shows a draft for 30 seconds); other chats get a placeholder message that
is edited as text arrives (paced per chat), then replaced by the final text. The first
preview waits one edit interval, so a quick reply is just one message. The final text is
sent persistently (see ``delivery.persistently``); typing and previews stop with it, or at
``aclose``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial

from aiogram.exceptions import (
    AiogramError,
    TelegramAPIError,
    TelegramBadRequest,
    TelegramForbiddenError,
    TelegramNotFound,
)

from channels.activity import reply_text
from channels.streaming import Streaming
from gateway.api import PermissionRequired, Reply, ReplySink, RuntimeEvent

from .activity import ActivityMessage
from .delivery import (
    HTML,
    Target,
    describe,
    edit_chunk,
    entities_refused,
    persistently,
    send_chunk,
)
from .manners import blocked, queued_reaction
from .outbox import Outbox
from .render import Chunk, escape, preview, render

log = logging.getLogger("slashgate.telegram")

TYPING_EVERY = 4.5  # Telegram shows "typing" for 5 seconds
DRAFT_EVERY = 20.0  # a draft is shown for 30 seconds: send it again before it goes


class TelegramSink(Streaming, ReplySink):
    def __init__(self, outbox: Outbox, target: Target, user_id: int) -> None:
        self.outbox = outbox
        self.bot = outbox.bot
        self.target = target
        self.user_id = user_id
        super().__init__(outbox.throttle.interval)
        self._placeholder: int | None = None
        self._placeholder_shows: Chunk | None = None  # as last sent or edited
        self._draft = target.private and outbox.drafts
        self._activity: ActivityMessage | None = None  # made with the first agent event
        self._queued = False  # the input shows the "queued" reaction

    async def queued(self, ahead: int) -> None:
        self._queued = await queued_reaction(self.bot, self.target, True)

    async def event(self, event: RuntimeEvent) -> None:
        if isinstance(event, PermissionRequired):
            try:
                await self.outbox.permissions.ask(self.target, self.user_id, event)
            except TelegramForbiddenError as exc:
                blocked(self.target, exc)
            except AiogramError as exc:  # tried again already: Telegram is down
                log.error("permission prompt in chat %s not shown: %s", self.chat, describe(exc))
        else:
            if self._activity is None:
                self._activity = ActivityMessage(self.outbox, self.target)
            self._activity.update(event)

    async def final(self, reply: Reply) -> None:
        try:
            await self._final(reply)
        except TelegramForbiddenError as exc:  # one line, not a traceback per message
            blocked(self.target, exc)

    async def _final(self, reply: Reply) -> None:
        await self._stop_streaming()
        if self._activity is not None:
            await self._activity.finish()
        if self._queued:
            await queued_reaction(self.bot, self.target, False)
        chunks = render(reply_text(reply)) or [Chunk(escape("…"), "…")]
        try:
            await self._deliver(chunks)
        except TelegramForbiddenError:
            raise  # the user blocked the bot: ``final`` says so in one line
        except AiogramError as exc:  # tried again already: Telegram is down; one line, no more
            log.error("reply in chat %s not delivered: %s", self.chat, describe(exc))

    @property
    def chat(self) -> str:
        return self.target.conversation

    async def _deliver(self, chunks: list[Chunk]) -> None:
        """The chunks in order (the first into the placeholder, when there is one); the first
        chunk that cannot be delivered ends it: a reply with a hole would mislead.
        """
        first = 0
        if self._placeholder is not None and chunks[0] == self._placeholder_shows:
            first = 1  # the preview shows it already: no call
        elif self._placeholder is not None:
            await self.outbox.throttle.wait(str(self.target.chat_id))
            try:
                await persistently(
                    partial(edit_chunk, self.bot, self.target, self._placeholder, chunks[0])
                )
                first = 1
            except TelegramBadRequest as exc:  # the placeholder is gone: send a new message
                log.warning("could not edit the placeholder (%s); sending anew", exc.message)
        for i, chunk in enumerate(chunks[first:], start=first):
            await persistently(partial(send_chunk, self.bot, self.target, chunk, quote=i == 0))

    # -- typing and previews --------------------------------------------------------------

    async def _keep_typing(self) -> None:
        while True:
            try:
                await self.bot.send_chat_action(
                    chat_id=self.target.chat_id,
                    action="typing",
                    message_thread_id=self.target.thread_id,
                )
            except AiogramError as exc:
                log.debug("typing action refused: %s", describe(exc))
            await asyncio.sleep(TYPING_EVERY)

    async def _stream(self) -> None:
        dirty = self._dirty
        assert dirty is not None
        while True:
            # Not wait_for: on 3.11 it can swallow a cancel that meets the event being set.
            with contextlib.suppress(TimeoutError):  # no news: the same draft again
                async with asyncio.timeout(DRAFT_EVERY if self._draft else None):
                    await dirty.wait()
            await self.outbox.throttle.wait(str(self.target.chat_id))
            # The slot first, then the text: under pressure the slot comes late, and the
            # preview it carries shows all that arrived meanwhile (docs/rate-limits.md).
            async with self.outbox.pacing.slot(self.target.chat_id):
                dirty.clear()
                chunk = preview("".join(self._parts))
                if chunk is not None:
                    # Shielded: stopping the stream must not abort a send half-way (a lost
                    # placeholder id would leave a stray message behind).
                    self._showing = asyncio.ensure_future(self._show(chunk))
                    await asyncio.shield(self._showing)

    async def _show(self, chunk: Chunk) -> None:
        try:
            if self._draft:
                await self._show_draft(chunk)
            elif self._placeholder is None:
                message = await send_chunk(self.bot, self.target, chunk, quote=True)
                self._placeholder = message.message_id
                self._placeholder_shows = chunk
            else:
                await edit_chunk(self.bot, self.target, self._placeholder, chunk)
                self._placeholder_shows = chunk
        except AiogramError as exc:  # a preview is best effort, not retried; the final is
            log.warning("preview not shown: %s", describe(exc))

    async def _show_draft(self, chunk: Chunk) -> None:
        async def send(text: str, parse_mode: str | None) -> None:
            await self.bot.send_message_draft(
                chat_id=self.target.chat_id,
                draft_id=self.target.reply_to or 1,  # the answered message: unique in the chat
                message_thread_id=self.target.thread_id,
                text=text,
                parse_mode=parse_mode,
            )

        try:
            try:
                await send(chunk.html, HTML)
            except TelegramBadRequest as exc:
                if not entities_refused(exc):
                    raise
                await send(chunk.plain, None)
        except TelegramAPIError as exc:
            # No drafts here (an older Bot API server, or a chat that refuses them): use a
            # placeholder for the rest of this reply, and stop trying if the method is unknown.
            log.warning("sendMessageDraft failed (%s); editing a placeholder instead", exc.message)
            self._draft = False
            if isinstance(exc, TelegramNotFound):
                self.outbox.drafts = False
            await self._show(chunk)
