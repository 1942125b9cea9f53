"""What the Slack channel does with an input: journal it before Slack is acknowledged (a
delivery Slack retries runs once), then run it in the background with its sink, telling its
user once when it fails or the channel stops first.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from slack_bolt.response import BoltResponse

from gateway.api import Entry, GatewayAPI, InboundMessage, ReplySink, StoreUnavailable
from gateway.attachments import AttachmentError
from gateway.tasks import BackgroundTasks

from .files import SlackFile, SlackFiles
from .manners import umbrella_usage
from .outbox import Outbox
from .permissions import answer_permission
from .reading import Received, command_form, command_input, message_input
from .sink import SlackSink
from .target import Target
from .web import respond

log = logging.getLogger("slashgate.slack")

UNAVAILABLE = "the gateway's store is unavailable, retry later"


def refusal(error: Exception) -> BoltResponse | None:
    """An input that could not be journaled is not acknowledged: Slack retries it."""
    if isinstance(error, StoreUnavailable):
        log.warning("a Slack request was not taken: %s", error)
        return BoltResponse(status=503, body=UNAVAILABLE)
    return None


class SlackInputs:
    def __init__(
        self,
        gateway: GatewayAPI,
        name: str,
        outbox: Outbox,
        files: SlackFiles,
        umbrella: str,
        show_reasoning: bool,
    ) -> None:
        self.gateway = gateway
        self.name = name
        self.outbox = outbox
        self.files = files
        self.umbrella = umbrella
        self.show_reasoning = show_reasoning
        self.stopping = False  # from now on Slack is told to come back later
        self._tasks = BackgroundTasks()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(work)

    async def drain(self, grace: float) -> None:
        """Let the inputs in flight finish for at most ``grace`` seconds, then cancel the rest
        (each cancelled input still tells its user, once).
        """
        await self._tasks.drain(grace)

    async def on_message(
        self, body: dict[str, Any], event: dict[str, Any], bot_user_id: str | None
    ) -> None:
        received = message_input(body, event, bot_user_id)
        if received is None:
            return
        target, _, ts, _ = received
        # One claim per message: a retried event, and a mention in a DM that comes both as
        # app_mention and as message, run once.
        # Of the envelope, only what ``message_input`` reads: the event is in it a second time.
        envelope = {"team_id": body.get("team_id")}
        record = {"kind": "message", "body": envelope, "event": event, "bot": bot_user_id}
        claim = f"slack:message:{target.channel}:{ts}"
        entry = await self.gateway.accept(self.name, target.conversation, record, claim)
        if entry is not None:
            self.spawn(self._handle(received, entry))

    async def on_command(self, command: dict[str, Any]) -> None:
        """Journal a slash command; what it runs is worked out after the ack."""
        name = str(command.get("command") or "").lower()
        if name == self.umbrella and not str(command.get("text") or "").strip():
            self.spawn(self._say_usage(command.get("response_url")))  # nothing to run
            return
        channel = command.get("channel_id")
        if not name or not channel or not command.get("user_id"):
            return
        trigger = command.get("trigger_id")
        claim = f"slack:command:{trigger}" if trigger else None
        form = command_form(command)
        # A command's conversation is its channel (``command_input``'s target).
        entry = await self.gateway.accept(
            self.name, channel, {"kind": "command", "command": form}, claim
        )
        if entry is not None:
            self.spawn(self._run_command(form, entry))

    def on_permission(self, body: dict[str, Any], action: dict[str, Any]) -> None:
        """A permission button was clicked: answered in the background."""
        self.spawn(answer_permission(self.gateway, self.outbox.session, self.name, body, action))

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        """A journaled input read again as it was read from Slack, or None."""
        record = entry.body
        received: Received | None = None
        if record.get("kind") == "message":
            received = message_input(record["body"], record["event"], record.get("bot"))
        elif record.get("kind") == "command":
            received = command_input(record["command"], self.umbrella)
        if received is None:
            return None
        try:
            return await self._message(received), self._sink(received[0])
        except AttachmentError as exc:
            log.warning("a journaled Slack message cannot run again: %s", exc)
            return None

    async def _run_command(self, form: dict[str, Any], entry: Entry) -> None:
        received = command_input(form, self.umbrella)
        assert received is not None  # ``on_command`` journals only commands it can run
        await self._handle(received, entry)

    def _given(self, received: Received) -> InboundMessage | Coroutine[Any, Any, InboundMessage]:
        """What ``gateway.handle`` takes: the message; with files, what fetches them (the
        gateway answers once whatever fails, the fetch included). Without files, nothing
        calls back into the channel.
        """
        target, text, message_id, files = received
        message = InboundMessage(
            channel=self.name,
            conversation=target.conversation,
            user=target.user,
            text=text,
            message_id=message_id,
            meta={"team": target.team},
            # A direct message's channel is an IM: its id starts with D.
            direct=target.channel.startswith("D"),
            groups=(target.channel, target.team) if target.team else (target.channel,),
        )
        return self._with_files(message, files) if files else message

    async def _message(self, received: Received) -> InboundMessage:
        """The message, its files fetched (AttachmentError when they cannot be) where its
        sender may talk.
        """
        given = self._given(received)
        return given if isinstance(given, InboundMessage) else await given

    async def _with_files(
        self, message: InboundMessage, files: tuple[SlackFile, ...]
    ) -> InboundMessage:
        """``message`` with its files fetched (AttachmentError when they cannot be) where its
        sender may talk.
        """
        if await self.gateway.access.lets_talk(message):
            assert self.outbox.session is not None  # made at start
            attachments = await self.files.fetch(self.outbox.session, files)
            message = replace(message, attachments=attachments)
        return message

    def _sink(self, target: Target) -> SlackSink:
        return SlackSink(self.outbox, target, self.show_reasoning)

    async def _handle(self, received: Received, entry: Entry) -> None:
        sink = self._sink(received[0])
        try:
            await self.gateway.handle(self._given(received), sink, entry)
        finally:
            await sink.aclose()

    async def _say_usage(self, response_url: str | None) -> None:
        if response_url:
            body = {"response_type": "ephemeral", "text": umbrella_usage(self.umbrella)}
            await respond(self.outbox.session, response_url, body)
