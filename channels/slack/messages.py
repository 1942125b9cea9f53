"""One input's messages in Slack: posted, updated and deleted where its replies go, the first
one led by who ran what, through a slash command's response_url where the bot may not post.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError

from channels.text import chunks
from contract import utf16_len

from .manners import QUEUED_REACTION, invocation_line
from .mrkdwn import TEXT_LIMIT
from .outbox import Outbox
from .target import Target
from .web import FAILURES, error_code, respond

log = logging.getLogger("slashgate.slack")

# Errors after which the bot cannot post in a channel: fall back to the command's response_url.
_CANNOT_POST = {"not_in_channel", "channel_not_found", "is_archived", "restricted_action"}


class Messages:
    def __init__(self, outbox: Outbox, target: Target) -> None:
        self.outbox = outbox
        self.target = target
        self._lead = invocation_line(target)
        self._lead_ts: str | None = None  # the message that starts with it
        # The bot may not post here: messages go through the command's response_url. Set
        # here only (an attribute: the stream reads it for every piece of text).
        self.via_response_url = False

    async def react(self, method: str) -> bool:
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

    def room(self, ts: str | None) -> int:
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

    async def reply(self, text: str, edit: str | None, shown: str | None) -> None:
        """A final reply's mrkdwn ``text`` in messages under Slack's limit, the first into
        message ``edit`` when there is one (no call when it shows that already: ``shown``).
        The first message that cannot go ends it (logged): a reply with a hole would mislead.
        """
        texts = chunks(text, TEXT_LIMIT - self.room(edit))
        if edit is not None:
            if texts[0] != shown and not await self.update(edit, texts[0]):
                return
            texts = texts[1:]
        for part in texts:
            if await self.post(part) is None:
                return

    async def _post(
        self, text: str, blocks: list[dict[str, Any]] | None, preview: bool, lead: bool
    ) -> str | None:
        """Post in the thread (or the channel): the message's ts, ``""`` when it went through
        a response_url (no ts), None when it was not posted (logged). Where the bot may not
        post, a slash command's response_url takes the message instead, except previews: it
        takes only five.
        """
        if not self.via_response_url:
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
                self.via_response_url = True
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

    async def delete(self, ts: str) -> None:
        """Delete message ``ts``; a failure is logged."""
        try:
            await self.outbox.client.chat_delete(channel=self.target.channel, ts=ts)
        except SlackApiError as exc:
            log.warning("chat.delete in %s failed: %s", self.target.channel, exc)

    def _failed(self, what: str, preview: bool) -> None:
        """One line: a preview is dropped (WARNING), a reply that must arrive was tried
        again already and is lost (ERROR).
        """
        if preview:
            log.warning("preview in %s dropped (%s)", self.target.channel, what)
        else:
            log.error("message in %s not delivered (%s)", self.target.channel, what)
