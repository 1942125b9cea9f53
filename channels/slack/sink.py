"""One input's replies rendered in Slack: streamed while the runtime writes, then the final
reply chunked under Slack's limits; rejections of slash commands only for the one who typed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import ClientSession
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from channels.activity import with_usage
from contract import Classification, ComposerInputMessage, utf16_len
from gateway.events import PermissionOption, PermissionRequired, RuntimeEvent
from gateway.inbound import Reply, ReplySink

from .activity import ActivityPost
from .manners import QUEUED_REACTION, invocation_line
from .mrkdwn import SECTION_LIMIT, TEXT_LIMIT, chunks, escape, shorten, to_mrkdwn
from .web import FAILURES, error_code, respond

log = logging.getLogger("slashgate.slack")

STREAM_LIMIT = 12_000  # chat.startStream / appendStream: markdown_text per call
PERMISSION_ACTION = "slashgate_permission"
WARNING = ":warning: "
# Errors after which the bot cannot post in a channel: fall back to the command's response_url.
_CANNOT_POST = {"not_in_channel", "channel_not_found", "is_archived", "restricted_action"}
# chat.startStream errors that say this app cannot stream at all (method, token, scopes): no
# sink tries again. Any other error (rate limits, this channel's restrictions, this call's
# arguments) turns streaming off for its own reply only.
_NO_STREAMING = {"unknown_method", "method_deprecated", "not_allowed_token_type", "missing_scope"}


@dataclass
class Outbox:
    """What every sink of the channel shares: the Web API clients and streaming settings.
    ``client`` retries what must arrive (final replies, permission prompts); ``previews``
    (streaming, the message updated while the reply grows) drops a call that fails: the
    final reply replaces what it would have shown.
    """

    client: AsyncWebClient
    previews: AsyncWebClient
    update_interval: float = 1.5  # chat.update is Tier 3 (about 50 a minute per channel)
    native_streaming: bool = True  # chat.startStream works until Slack says otherwise
    session: ClientSession | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Target:
    """Where one input's replies go."""

    channel: str
    user: str
    conversation: str
    team: str | None = None
    thread_ts: str | None = None  # None: the channel itself (slash commands)
    response_url: str | None = None  # slash commands: ephemeral rejections, fallback posting
    invocation: str | None = None  # a slash command as typed: its reply says who ran what
    message_ts: str | None = None  # the user's message (its reactions)


def permission_title(event: PermissionRequired) -> str:
    """The request's title, escaped and cut so that ``:lock: *title*`` fits a section."""
    return shorten(escape(event.title), SECTION_LIMIT - utf16_len(":lock: **"))


def permission_blocks(event: PermissionRequired, target: Target) -> list[dict[str, Any]]:
    """The request as a section and one button per option; the value carries the request."""
    buttons = [_button(index, option, event, target) for index, option in enumerate(event.options)]
    section = {"type": "mrkdwn", "text": f":lock: *{permission_title(event)}*"}
    return [
        {"type": "section", "text": section},
        {"type": "actions", "block_id": PERMISSION_ACTION, "elements": buttons[:25]},
    ]


def permission_text(event: PermissionRequired) -> str:
    """The request in words, options listed, for when Slack refuses its buttons."""
    options = "\n".join(f"• {escape(option.name or option.option_id)}" for option in event.options)
    return f":lock: *{permission_title(event)}*\n{options}"


def _button(
    index: int, option: PermissionOption, event: PermissionRequired, target: Target
) -> dict[str, Any]:
    value = {
        "c": target.conversation,
        "r": event.request_id,
        "o": option.option_id,
        "u": target.user,
    }
    button: dict[str, Any] = {
        "type": "button",
        "action_id": f"{PERMISSION_ACTION}:{index}",
        "text": {"type": "plain_text", "text": option.name[:75] or option.option_id[:75]},
        "value": json.dumps(value, separators=(",", ":")),
    }
    if option.kind.startswith("allow"):
        button["style"] = "primary"
    elif option.kind.startswith("reject"):
        button["style"] = "danger"
    return button


def render(reply: Reply, limit: int = TEXT_LIMIT) -> list[str]:
    """The reply as mrkdwn messages; a plain (non-slash) failure gets the warning prefix."""
    text = to_mrkdwn(reply.text)
    if reply.category is not None and not reply.slash:
        text = WARNING + text
    return chunks(text, limit)


class SlackSink(ReplySink):
    def __init__(self, outbox: Outbox, target: Target, show_reasoning: bool = True) -> None:
        self.outbox = outbox
        self.target = target
        self.activity = ActivityPost(self, show_reasoning)
        self._lead = invocation_line(target)
        self._lead_ts: str | None = None  # the message that starts with it
        self._queued = False  # the user's message shows the "queued" reaction
        self.finished = False
        self._accepted = False
        self._parts: list[str] = []
        self._native = target.thread_ts is not None and outbox.native_streaming
        self._stream_ts: str | None = None  # the chat.startStream message
        self._streamed = 0  # characters of the Markdown already in that stream
        self._stream_broken = False
        self._message_ts: str | None = None  # the chat.update message
        self._shown = ""  # Markdown the chat.update message shows
        self._via_response_url = False  # the bot may not post in this channel
        self._flusher: asyncio.Task[None] | None = None
        self._starting: asyncio.Handle | None = None  # the flusher, due on the next loop pass
        self._waiting = False
        self._closing = False
        self._last_flush: float | None = None

    # -- ReplySink -------------------------------------------------------------------------

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self._accepted = True

    async def queued(self, ahead: int) -> None:
        # Only messages queue (a slash command on a busy session is refused): mark the message.
        if self.target.message_ts is not None:
            self._queued = await self._react("reactions_add")

    async def delta(self, text: str) -> None:
        self.activity.progress()
        self._parts.append(text)
        if self._via_response_url:  # a response_url takes 5 messages: keep them for the reply
            return
        if self._starting is None and (self._flusher is None or self._flusher.done()):
            # On the loop's next pass: a reply that is final by then costs no task.
            self._starting = asyncio.get_running_loop().call_soon(self._start_flushing)

    async def event(self, event: RuntimeEvent) -> None:
        if isinstance(event, PermissionRequired):
            blocks = permission_blocks(event, self.target)
            if await self.post(f":lock: {permission_title(event)}", blocks=blocks) is None:
                # Without a message the user would not know the turn waits for them.
                await self.post(permission_text(event))
        else:
            self.activity.update(event)

    async def final(self, reply: Reply) -> None:
        self.finished = True
        await self._settle()
        await self.activity.finish()
        if self._queued:
            await self._react("reactions_remove")
        if reply.usage is not None:
            reply = dataclasses.replace(reply, text=with_usage(reply.text, reply.usage))
        if not self._accepted and reply.category is not None and self.target.response_url:
            # A rejected slash command: only its author sees it, as Slack does for its own.
            for text in render(reply)[:5]:
                await respond(
                    self.outbox.session,
                    self.target.response_url,
                    {"response_type": "ephemeral", "text": text},
                )
            return
        if self._stream_ts is not None and await self._finish_stream(reply):
            return
        edit = self._message_ts if reply.category is None else None
        messages = render(reply, TEXT_LIMIT - self._room(edit))
        if self._message_ts is not None and reply.category is None:
            if not await self.update(self._message_ts, messages[0]):
                return
            messages = messages[1:]
        for text in messages:
            if await self.post(text) is None:
                return  # logged; the rest of a reply with a hole would mislead

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """The input is over (even if it ended without a final reply): stop streaming."""
        self._closing = True
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
        self.activity.cancel()

    # -- streaming -------------------------------------------------------------------------

    def _start_flushing(self) -> None:
        self._starting = None
        if not self._closing:
            self._flusher = asyncio.ensure_future(self._flush_loop())

    async def _flush_loop(self) -> None:
        loop = asyncio.get_running_loop()
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

    async def _settle(self) -> None:
        """Stop streaming before the final reply: cancel a wait, let an API call finish."""
        self._closing = True
        task = self._flusher
        if task is not None and not task.done():
            if self._waiting:
                task.cancel()
            await asyncio.wait({task})

    async def _append(self) -> None:
        text = "".join(self._parts)
        pending = text[self._streamed :]
        client = self.outbox.previews
        if self._stream_ts is None:
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
            self._stream_ts = str(response["ts"])
            self._streamed += len(first)
            pending = pending[len(first) :]
        for start in range(0, len(pending), STREAM_LIMIT):
            piece = pending[start : start + STREAM_LIMIT]
            try:
                await client.chat_appendStream(
                    channel=self.target.channel, ts=self._stream_ts, markdown_text=piece
                )
            except FAILURES:
                self._stream_broken = True
                raise
            self._streamed += len(piece)

    def _needs_recipient(self) -> bool:
        """chat.startStream needs the recipient outside direct messages."""
        return not self.target.channel.startswith("D") and bool(self.target.team)

    async def _finish_stream(self, reply: Reply) -> bool:
        """Close the stream; True when it now shows the whole reply."""
        assert self._stream_ts is not None
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
                    channel=self.target.channel, ts=self._stream_ts, markdown_text=piece
                )
            await client.chat_stopStream(
                channel=self.target.channel, ts=self._stream_ts, markdown_text=pieces[-1] or None
            )
        except FAILURES as exc:  # the reply is posted whole instead
            log.warning("closing the stream in %s failed: %s", self.target.channel, error_code(exc))
            return False
        return complete

    async def _preview(self) -> None:
        """chat.update fallback: one message showing the reply so far, cut to one chunk."""
        markdown = "".join(self._parts)
        rendered = to_mrkdwn(markdown)
        rendered = shorten(rendered, TEXT_LIMIT - self._room(self._message_ts))
        if self._message_ts is None:
            self._message_ts = await self.post(rendered, preview=True)
            if self._message_ts is None:  # no message to update: the final reply says it all
                self._closing = True
        else:
            await self.update(self._message_ts, rendered, preview=True)
        self._shown = markdown

    # -- Web API ---------------------------------------------------------------------------

    async def _react(self, method: str) -> bool:
        """Add or remove the "queued" reaction on the user's message; True when it went."""
        try:
            await getattr(self.outbox.client, method)(
                channel=self.target.channel,
                timestamp=self.target.message_ts,
                name=QUEUED_REACTION,
            )
            return True
        except FAILURES as exc:
            log.info("%s in %s: %s", method, self.target.channel, error_code(exc))
            return False

    def _leads(self, ts: str | None) -> bool:
        """The message ``ts`` (None: the next one posted) starts with the lead."""
        return self._lead is not None and ts == self._lead_ts

    def _room(self, ts: str | None) -> int:
        """What the lead takes of message ``ts``'s length."""
        return utf16_len(self._lead) + 1 if self._lead and self._leads(ts) else 0

    def _with_lead(
        self, ts: str | None, text: str, blocks: list[dict[str, Any]] | None
    ) -> tuple[str, list[dict[str, Any]] | None]:
        """The first message of a slash command's reply says who ran what."""
        if self._lead is None or not self._leads(ts):
            return text, blocks
        if blocks is not None:
            lead = {"type": "context", "elements": [{"type": "mrkdwn", "text": self._lead}]}
            blocks = [lead, *blocks]
        return f"{self._lead}\n{text}", blocks

    async def post(
        self, text: str, blocks: list[dict[str, Any]] | None = None, preview: bool = False
    ) -> str | None:
        first = self._leads(None)
        ts = await self._post(text, blocks, preview, first)
        if first and ts:
            self._lead_ts = ts
        elif first and ts == "":
            self._lead = None  # through a response_url: Slack shows the command itself
        return ts

    async def _post(
        self, text: str, blocks: list[dict[str, Any]] | None, preview: bool, lead: bool
    ) -> str | None:
        """Post in the thread (or the channel): the message's ts, ``""`` when it went through
        a response_url (no ts), None when it was not posted (logged). Where the bot may not
        post, a slash command's response_url takes the message instead, except previews: it
        takes only five.
        """
        if not self._via_response_url:
            client = self.outbox.previews if preview else self.outbox.client
            led, led_blocks = self._with_lead(None, text, blocks) if lead else (text, blocks)
            try:
                response = await client.chat_postMessage(
                    channel=self.target.channel,
                    text=led,
                    thread_ts=self.target.thread_ts,
                    blocks=led_blocks,
                )
                return str(response["ts"])
            except FAILURES as exc:
                error = error_code(exc)
                if error not in _CANNOT_POST or not self.target.response_url:
                    self._failed(f"chat.postMessage: {error}", preview)
                    return None
                self._via_response_url = True
        if preview:
            return None
        assert self.target.response_url is not None
        body: dict[str, Any] = {"response_type": "in_channel", "text": text}
        if blocks:
            body["blocks"] = blocks
        if await respond(self.outbox.session, self.target.response_url, body):
            return ""
        self._failed("response_url", preview)
        return None

    async def update(
        self,
        ts: str,
        text: str,
        blocks: list[dict[str, Any]] | None = None,
        preview: bool = False,
    ) -> bool:
        """Edit message ``ts``; False when it could not be (logged)."""
        text, blocks = self._with_lead(ts, text, blocks)
        client = self.outbox.previews if preview else self.outbox.client
        try:
            await client.chat_update(channel=self.target.channel, ts=ts, text=text, blocks=blocks)
        except FAILURES as exc:
            self._failed(f"chat.update: {error_code(exc)}", preview)
            return False
        return True

    def _failed(self, what: str, preview: bool) -> None:
        """One line: a preview is dropped (WARNING), a reply that must arrive was tried
        again already and is lost (ERROR).
        """
        if preview:
            log.warning("preview in %s dropped (%s)", self.target.channel, what)
        else:
            log.error("message in %s not delivered (%s)", self.target.channel, what)
