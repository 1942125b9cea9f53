"""A reply shown while the runtime writes it: streamed natively (chat.startStream in a
thread), or else one message updated in place, at most once per update interval.
"""

from __future__ import annotations

import asyncio
import logging

from slack_sdk.errors import SlackApiError

from channels.text import shorten
from gateway.api import Reply

from .messages import Messages
from .mrkdwn import TEXT_LIMIT, to_mrkdwn
from .pacing import Queued, watch
from .web import FAILURES, error_code

log = logging.getLogger("slashgate.slack")

STREAM_LIMIT = 12_000  # chat.startStream / appendStream: markdown_text per call
# chat.startStream errors that say this app cannot stream at all (method, token, scopes): no
# sink tries again. Any other error (rate limits, this channel's restrictions, this call's
# arguments) turns streaming off for its own reply only.
_NO_STREAMING = {"unknown_method", "method_deprecated", "not_allowed_token_type", "missing_scope"}


class ReplyStream:
    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.outbox = messages.outbox
        self.target = messages.target
        self._parts: list[str] = []
        self._native = self.target.thread_ts is not None and self.outbox.native_streaming
        self.stream_ts: str | None = None  # the chat.startStream message, once started
        self._streamed = 0  # characters of the Markdown already in that stream
        self._stream_broken = False
        self.message_ts: str | None = None  # the chat.update message
        self._shown = ""  # Markdown the chat.update message shows
        self.rendered: str | None = None  # its mrkdwn, as last posted or updated
        self._queued: Queued | None = None  # the flusher's call waits for its turn
        self._flusher: asyncio.Task[None] | None = None
        self._starting: asyncio.Handle | None = None  # the flusher, due on the next loop pass
        self._waiting = False
        self._closing = False
        self._last_flush: float | None = None

    def add(self, text: str) -> None:
        """More of the reply: shown on the loop's next pass, or after the update interval."""
        self._parts.append(text)
        if self.messages.via_response_url:  # a response_url takes 5 messages: keep them
            return
        if self._starting is None and (self._flusher is None or self._flusher.done()):
            # On the loop's next pass: a reply that is final by then costs no task.
            self._starting = asyncio.get_running_loop().call_soon(self._start_flushing)

    async def settle(self) -> None:
        """Stop streaming before the final reply: cancel a wait (for the interval, or for a
        call's turn under the rate limits: a preview that has not gone out never will), let
        a call that went out finish.
        """
        self._stop_starting()
        task = self._flusher
        if task is not None and not task.done():
            if self._waiting or (self._queued is not None and self._queued.waiting):
                task.cancel()
            await asyncio.wait({task})

    def close(self) -> None:
        """The input is over (even if it ended without a final reply): stop streaming."""
        self._stop_starting()
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()

    async def finish(self, reply: Reply) -> bool:
        """Close the native stream, if one was started; True when it now shows the whole
        reply.
        """
        if self.stream_ts is None:
            return False
        streamed = "".join(self._parts)[: self._streamed]
        complete = (
            reply.category is None and not self._stream_broken and reply.text.startswith(streamed)
        )
        rest = reply.text[len(streamed) :] if complete else ""
        pieces = [rest[i : i + STREAM_LIMIT] for i in range(0, len(rest), STREAM_LIMIT)] or [""]
        client = self.outbox.client
        try:
            for piece in pieces[:-1]:
                await client.chat_appendStream(
                    channel=self.target.channel, ts=self.stream_ts, markdown_text=piece
                )
            await client.chat_stopStream(
                channel=self.target.channel, ts=self.stream_ts, markdown_text=pieces[-1] or None
            )
        except FAILURES as exc:  # the reply is posted whole instead
            log.warning("closing the stream in %s failed: %s", self.target.channel, error_code(exc))
            return False
        return complete

    def _stop_starting(self) -> None:
        """No flusher starts from now on: one due on the next loop pass is not called (it
        would do nothing now).
        """
        self._closing = True
        if self._starting is not None:
            self._starting.cancel()
            self._starting = None

    def _start_flushing(self) -> None:
        self._starting = None
        if not self._closing:
            self._flusher = asyncio.ensure_future(self._flush_loop())

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
        self._queued = watch()
        while not self._closing and self._dirty():
            if self._last_flush is not None:
                wait = self._last_flush + self.outbox.update_interval - loop.time()
                if wait > 0:
                    self._waiting = True
                    try:
                        await asyncio.sleep(wait)
                    finally:
                        self._waiting = False
            try:
                await (self._append() if self._native else self._preview())
            except FAILURES as exc:  # a preview is best effort: the final reply still goes
                log.warning("streaming in %s stopped: %s", self.target.channel, error_code(exc))
                return
            except Exception:
                log.exception("streaming a reply to %s failed", self.target.channel)
                return
            finally:
                self._last_flush = loop.time()

    def _dirty(self) -> bool:
        text = "".join(self._parts)
        if self._native:
            return not self._stream_broken and len(text) > self._streamed
        return text != self._shown

    async def _append(self) -> None:
        text = "".join(self._parts)
        pending = text[self._streamed :]
        client = self.outbox.previews
        if self.stream_ts is None:
            first = pending[:STREAM_LIMIT]
            try:
                recipient = self._needs_recipient()
                response = await client.chat_startStream(
                    channel=self.target.channel,
                    thread_ts=self.target.thread_ts or "",
                    markdown_text=first,
                    recipient_user_id=self.target.user if recipient else None,
                    recipient_team_id=self.target.team if recipient else None,
                )
            except SlackApiError as exc:
                error = error_code(exc)
                if error in _NO_STREAMING:
                    self.outbox.native_streaming = False
                log.info("chat.startStream unavailable (%s); updating a message instead", error)
                self._native = False
                await self._preview()
                return
            self.stream_ts = str(response["ts"])
            self._streamed += len(first)
            pending = pending[len(first) :]
        for start in range(0, len(pending), STREAM_LIMIT):
            piece = pending[start : start + STREAM_LIMIT]
            try:
                await client.chat_appendStream(
                    channel=self.target.channel, ts=self.stream_ts, markdown_text=piece
                )
            except FAILURES:
                self._stream_broken = True
                raise
            self._streamed += len(piece)

    def _needs_recipient(self) -> bool:
        """chat.startStream needs the recipient outside direct messages."""
        return not self.target.channel.startswith("D") and bool(self.target.team)

    async def _preview(self) -> None:
        """chat.update fallback: one message showing the reply so far, cut to one chunk."""
        markdown = "".join(self._parts)
        rendered = to_mrkdwn(markdown)
        rendered = shorten(rendered, TEXT_LIMIT - self.messages.room(self.message_ts))
        if self.message_ts is None:
            self.message_ts = await self.messages.post(rendered, preview=True)
            if self.message_ts is None:  # no message to update: the final reply says it all
                self._closing = True
            else:
                self.rendered = rendered
        elif await self.messages.update(self.message_ts, rendered, preview=True):
            self.rendered = rendered
        self._shown = markdown
