"""Slack on slack-bolt (async): events, slash commands and interactivity at ``/slack/events``
on the gateway's own aiohttp server, or over Socket Mode when an app token is set.

Every listener acknowledges at once and schedules the work: the app runs with
``process_before_response`` so that Slack gets its answer as soon as the listener returns,
without the polling of bolt's default ack path. Over HTTP a plain slash command (the hot
path) skips bolt's dispatch once the app is authorized: it is answered as bolt would answer
it, by the same listener code.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable, Coroutine
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_plus

from aiohttp import ClientSession, ClientTimeout, web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from channels.webhook.wire import error_body
from gateway.attachments import AttachmentError
from gateway.body import BodyError, header_bytes, parse_json, read_body
from gateway.channel import Channel
from gateway.inbound import Attachment, InboundMessage, ReplySink
from gateway.openapi import document
from gateway.state import Entry, StoreUnavailable
from gateway.tasks import BackgroundTasks

from .docs import operations
from .files import SlackFile, SlackFiles, slack_files
from .manifest import EVENTS_PATH
from .manners import umbrella_usage
from .markup import command_source, normalize, umbrella_source
from .metering import count_retries, counted
from .outbox import Outbox
from .permissions import PERMISSION_ACTION, answer_permission
from .sink import SlackSink
from .target import Target
from .web import client_log, respond, web_client

if TYPE_CHECKING:
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    from gateway.config import Settings
    from gateway.core import Gateway

log = logging.getLogger("slashgate.slack")

# Slack retries an unacknowledged event three times, the last about five minutes after the
# first delivery: an hour's window covers it with room to spare.
_MESSAGE_SUBTYPES = {None, "file_share", "thread_broadcast"}
# What ``_command_input`` reads of a slash command's form: all the journal keeps of it.
_COMMAND_FIELDS = (
    "command",
    "text",
    "channel_id",
    "user_id",
    "team_id",
    "response_url",
    "trigger_id",
)

# An input as read from Slack: where its reply goes, its text, its id, and its files.
Received = tuple[Target, str, str | None, tuple[SlackFile, ...]]
RETRY_AFTER = "1"  # seconds, in the 503 answered while the channel stops
STOPPING = "the gateway is stopping, retry later"
UNAVAILABLE = "the gateway's store is unavailable, retry later"
STOPPED = "the gateway stopped before the reply was finished"
SIGNATURE_AGE = 60 * 5  # seconds: an older (or later) request timestamp is refused, as Slack says


def _form(body: str) -> dict[str, str]:
    """``dict(parse_qsl(body, keep_blank_values=True))`` (as bolt parses a form), in about half
    its time: only names and values that are escaped are unquoted.
    """
    form = {}
    for pair in body.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "%" in name or "+" in name:
            name = unquote_plus(name)
        if "%" in value or "+" in value:
            value = unquote_plus(value)
        form[name] = value
    return form


def _error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    """The error body of the webhook channel on the same server."""
    return web.json_response(error_body(code, message), status=status, headers=headers)


class SlackChannel(Channel):
    name = "slack"

    def __init__(
        self, gateway: Gateway, settings: Settings, *, update_interval: float = 1.5
    ) -> None:
        super().__init__(gateway, settings)
        if settings.slack_bot_token is None or settings.slack_signing_secret is None:
            raise ValueError("the Slack channel needs slack_bot_token and slack_signing_secret")
        self._token = settings.slack_bot_token.get_secret_value()
        secret = settings.slack_signing_secret.get_secret_value()
        self._signing = hmac.new(secret.encode(), digestmod=hashlib.sha256)  # copied per request
        debug = settings.log_level.upper() == "DEBUG"
        client_log.setLevel(logging.DEBUG if debug else logging.INFO)
        self.outbox = Outbox(
            web_client(settings.slack_api_base, self._token),
            web_client(settings.slack_api_base, self._token, persistent=False),
            update_interval,
        )
        self.files = SlackFiles(settings, self._token)
        count_retries(self.outbox.client, gateway.metrics)
        self._umbrella = "/" + settings.slack_umbrella_command.lower().lstrip("/")
        self._auth: AuthorizeResult | None = None
        self._auth_lock = asyncio.Lock()
        self._tasks = BackgroundTasks()
        self._stopping = False
        self._socket: AsyncSocketModeHandler | None = None
        self._connecting: asyncio.Task[None] | None = None

        async def authorize() -> AuthorizeResult:
            return await self._authorization()

        self.app = AsyncApp(
            name="slashgate",
            client=web_client(settings.slack_api_base, None),
            signing_secret=secret,
            authorize=authorize,
            process_before_response=True,
            # ``events`` has checked the signature already (Socket Mode needs none).
            request_verification_enabled=False,
            logger=logging.getLogger("slashgate.slack.bolt"),
        )
        self._listen(self.app)

    # -- lifecycle ------------------------------------------------------------------------

    def mount(self, app: web.Application) -> None:
        app.router.add_post(EVENTS_PATH, self.events)
        document(app, *operations(EVENTS_PATH))

    async def readiness(self) -> str | None:
        if self._stopping:
            return "stopping"
        if self._socket is not None and not await self._socket.client.is_connected():
            return "Socket Mode is not connected"
        try:
            await self._authorization()  # answered from memory once it succeeded
        except Exception as exc:
            return f"auth.test failed: {exc}"
        return None

    async def check(self) -> str:
        found = await self.outbox.client.auth_test()
        detail = f"team {found.get('team')}, bot user {found.get('user_id')}"
        app_token = self.settings.slack_app_token
        if app_token is not None:
            apps = web_client(self.settings.slack_api_base, None)
            await apps.apps_connections_open(app_token=app_token.get_secret_value())
            detail += ", Socket Mode app token accepted"
        return detail

    async def start(self) -> None:
        self.outbox.session = ClientSession(
            timeout=ClientTimeout(total=self.settings.platform_timeout),
            middlewares=(counted(self.gateway.metrics, self.outbox.client.base_url),),
        )
        self.outbox.client.session = self.outbox.previews.session = self.outbox.session
        self._spawn(self._warm_up())
        app_token = self.settings.slack_app_token
        if app_token is not None:
            from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(
                self.app, app_token.get_secret_value(), web_client=self.outbox.client
            )
            # Connecting retries until Slack answers: never hold the gateway's start on it.
            self._connecting = asyncio.ensure_future(self._socket.connect_async())

    async def stop(self) -> None:
        # First of all: from now on Slack is told to come back later, and nothing new starts.
        self._stopping = True
        if self._connecting is not None:
            self._connecting.cancel()
            await asyncio.wait({self._connecting})
        if self._socket is not None:
            await self._socket.close_async()
        await self.drain(self.settings.cancel_grace)
        if self.outbox.session is not None:  # only now: the inputs drained above post with it
            await self.outbox.session.close()

    async def drain(self, grace: float) -> None:
        """Let the inputs in flight finish for at most ``grace`` seconds, then cancel the rest
        (each cancelled input still tells its user, once).
        """
        await self._tasks.drain(grace)

    def describe(self) -> str:
        mode = "Socket Mode" if self.settings.slack_app_token else f"HTTP POST {EVENTS_PATH}"
        return f"slack ({mode}; umbrella command {self._umbrella})"

    async def _warm_up(self) -> None:
        """auth.test before the first request, so that no ack waits for it."""
        try:
            await self._authorization()
        except Exception as exc:  # retried on the first request
            log.warning("Slack auth.test failed: %s", exc)

    async def _authorization(self) -> AuthorizeResult:
        if self._auth is None:
            async with self._auth_lock:
                if self._auth is None:
                    response = await self.outbox.client.auth_test()
                    self._auth = AuthorizeResult.from_auth_test_response(
                        auth_test_response=response, bot_token=self._token
                    )
        return self._auth

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        self._tasks.spawn(work)

    # -- HTTP ------------------------------------------------------------------------------

    async def events(self, request: web.Request) -> web.Response:
        """Events API, slash commands and interactivity: verified here, dispatched by bolt."""
        try:
            raw = await read_body(request, self.settings.webhook_max_body)
        except BodyError as exc:
            return _error(exc.status, exc.code, exc.message)
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            return _error(400, "invalid_request", "request body is not UTF-8")
        if not self._signed(request, raw):
            return _error(401, "unauthorized", "invalid or expired Slack signature")
        command = self._plain_command(request, body)
        if command is None:
            try:
                self._check_json(request, body)
            except BodyError as exc:
                return _error(exc.status, exc.code, exc.message)
        if command is not None and await self._authorized():
            # Journaled, then acknowledged at once: the command runs after the answer is sent.
            refused = await self._command(command)
            if refused is None:  # acknowledged with an empty body: Slack shows nothing
                return web.Response(content_type="text/plain")
            response = refused
        else:
            try:
                bolt_request = AsyncBoltRequest(
                    body=body, query=request.query_string, headers=dict(request.headers)
                )
            except Exception:
                return _error(400, "invalid_request", "malformed Slack payload")
            response = await self.app.async_dispatch(bolt_request)
        if response.status == 503:  # stopping or not journaled: Slack delivers the event again
            reason = UNAVAILABLE if response.body == UNAVAILABLE else STOPPING
            return _error(503, "service_unavailable", reason, {"Retry-After": RETRY_AFTER})
        if response.status >= 500:  # bolt could not handle a signed but unexpected payload
            log.warning("Slack payload not processed (%s)", response.status)
            return _error(400, "invalid_request", "unprocessable Slack payload")
        if response.status >= 400:  # bolt's own refusal (no listener for it): in this shape too
            reason = HTTPStatus(response.status).phrase
            return _error(response.status, reason.lower().replace(" ", "_"), reason)
        return await to_aiohttp_response(response)

    def _signed(self, request: web.Request, raw: bytes) -> bool:
        """Slack's v0 signature of the body as sent, at most five minutes old (compared in
        constant time), as slack_sdk's ``SignatureVerifier`` checks it.
        """
        stamp = request.headers.get("X-Slack-Request-Timestamp")
        signature = request.headers.get("X-Slack-Signature")
        if stamp is None or signature is None:
            return False
        try:
            if abs(time.time() - int(stamp)) > SIGNATURE_AGE:
                return False
        except ValueError:  # a timestamp that is not a number
            return False
        mac = self._signing.copy()
        mac.update(b"v0:" + stamp.encode() + b":" + raw)
        # As bytes: compare_digest refuses a str with a character past ASCII (a 500, not a 401).
        sent = header_bytes(request, "X-Slack-Signature")
        return hmac.compare_digest(b"v0=" + mac.hexdigest().encode(), sent)

    @staticmethod
    def _check_json(request: web.Request, body: str) -> None:
        """The JSON bolt is about to parse (an event, or an interactivity ``payload``) read by
        the gateway's strict reading first: BodyError 400 naming a string that is not valid
        Unicode (a lone ``\\ud800``), which bolt's parser would let through to the agent.
        """
        if request.content_type == "application/json":
            parse_json(body.encode())
        elif "payload=" in body:
            payload = _form(body).get("payload")
            if payload is not None:
                parse_json(payload.encode())

    def _plain_command(self, request: web.Request, body: str) -> dict[str, str] | None:
        """A slash command's form, which bolt's dispatch would only hand to ``on_command``:
        no SSL check, no interactivity ``payload``.
        """
        if request.content_type != "application/x-www-form-urlencoded":
            return None
        form = _form(body)
        if "command" not in form or "payload" in form or "ssl_check" in form:
            return None
        return form

    async def _authorized(self) -> bool:
        """auth.test succeeded (answered from memory once it has); if not, bolt's
        authorization answers the request, as it answers any other.
        """
        try:
            await self._authorization()
        except Exception:
            return False
        return True

    async def _command(self, command: dict[str, Any]) -> BoltResponse | None:
        """A slash command as bolt's dispatch takes it: the ``refuse_while_stopping``
        middleware, then ``on_command``, errors through ``on_error``. None: acknowledged.
        """
        if self._stopping:
            return BoltResponse(status=503)
        try:
            await self._on_command(command)
        except Exception as error:
            return self._refusal(error) or BoltResponse(status=500)
        return None

    @staticmethod
    def _refusal(error: Exception) -> BoltResponse | None:
        """An input that could not be journaled is not acknowledged: Slack retries it."""
        if isinstance(error, StoreUnavailable):
            log.warning("a Slack request was not taken: %s", error)
            return BoltResponse(status=503, body=UNAVAILABLE)
        return None

    # -- listeners -------------------------------------------------------------------------

    def _listen(self, app: AsyncApp) -> None:
        # Bolt injects arguments by parameter name, so listeners are plain functions.
        @app.middleware
        async def refuse_while_stopping(
            response: BoltResponse, next_: Callable[[], Awaitable[None]]
        ) -> BoltResponse:
            """While the channel stops, no listener runs and nothing is acknowledged: over
            HTTP Slack gets a 503, over Socket Mode no ack; either way it delivers again later
            (to this gateway restarted, or to another one).
            """
            if self._stopping:
                return BoltResponse(status=503)
            await next_()
            return response

        @app.error
        async def on_error(error: Exception) -> BoltResponse | None:
            return self._refusal(error)

        @app.event("app_mention")
        async def on_mention(body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
            await self._on_message(body, event, context.bot_user_id)

        @app.event("message")
        async def on_message(body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
            if event.get("channel_type") == "im":  # channel messages come as app_mention
                await self._on_message(body, event, context.bot_user_id)

        @app.event(re.compile(".*"))
        async def on_other_event() -> None:
            """Acknowledged, so that Slack does not retry what this app does not handle."""

        @app.command(re.compile(".*"))
        async def on_command(ack: Any, command: dict[str, Any]) -> None:
            await self._on_command(command)  # journaled first: an error here is no ack
            await ack()

        @app.action(re.compile(f"^{PERMISSION_ACTION}:"))
        async def on_permission(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
            await ack()
            work = answer_permission(self.gateway, self.outbox.session, self.name, body, action)
            self._spawn(work)

    async def _on_message(
        self, body: dict[str, Any], event: dict[str, Any], bot_user_id: str | None
    ) -> None:
        received = self._message_input(body, event, bot_user_id)
        if received is None:
            return
        target, _, ts, _ = received
        # One claim per message: a retried event, and a mention in a DM that comes both as
        # app_mention and as message, run once.
        # Of the envelope, only what ``_message_input`` reads: the event is in it a second time.
        envelope = {"team_id": body.get("team_id")}
        record = {"kind": "message", "body": envelope, "event": event, "bot": bot_user_id}
        await self._journal(received, record, f"slack:message:{target.channel}:{ts}")

    def _message_input(
        self, body: dict[str, Any], event: dict[str, Any], bot_user_id: str | None
    ) -> Received | None:
        """(where the reply goes, the text, the message ts, its files), or None: not for the
        bot.
        """
        user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
        if (
            event.get("bot_id")
            or event.get("subtype") not in _MESSAGE_SUBTYPES
            or not user
            or user == bot_user_id
            or not channel
            or not ts
        ):
            return None
        text = normalize(str(event.get("text") or ""), bot_user_id)
        files = slack_files(event)
        if not text.strip() and not files:
            return None
        # Replies go in the thread of the message. In a channel each thread is a conversation;
        # a direct message is one conversation (top level and threads), as a chat with a person.
        thread = str(event.get("thread_ts") or ts)
        direct = event.get("channel_type") == "im"
        team = event.get("team") or body.get("team_id")
        target = Target(
            channel=channel,
            user=user,
            conversation=channel if direct else f"{channel}:{thread}",
            team=team,
            thread_ts=thread,
            message_ts=ts,
        )
        return target, text, ts, files

    async def _on_command(self, command: dict[str, Any]) -> None:
        """Journal a slash command; what it runs is worked out after the ack."""
        name = str(command.get("command") or "").lower()
        if name == self._umbrella and not str(command.get("text") or "").strip():
            self._spawn(self._say_usage(command.get("response_url")))  # nothing to run
            return
        channel = command.get("channel_id")
        if not name or not channel or not command.get("user_id"):
            return
        trigger = command.get("trigger_id")
        claim = f"slack:command:{trigger}" if trigger else None
        form = {key: command[key] for key in _COMMAND_FIELDS if key in command}
        # A command's conversation is its channel (``_command_input``'s target).
        entry = await self._accept(channel, {"kind": "command", "command": form}, claim)
        if entry is not None:
            self._spawn(self._run_command(form, entry))

    async def _run_command(self, form: dict[str, Any], entry: Entry) -> None:
        received = self._command_input(form)
        assert received is not None  # ``_on_command`` journals only commands it can run
        await self._handle(received, entry)

    def _command_input(self, command: dict[str, Any]) -> Received | None:
        name = str(command.get("command") or "").lower()
        channel, user = command.get("channel_id"), command.get("user_id")
        if not name or not channel or not user:
            return None
        text = normalize(str(command.get("text") or ""))
        source = umbrella_source(text) if name == self._umbrella else command_source(name, text)
        # Slash commands cannot be typed in threads: they share the channel's conversation.
        target = Target(
            channel=channel,
            user=user,
            conversation=channel,
            team=command.get("team_id"),
            response_url=command.get("response_url"),
            invocation=command_source(name, str(command.get("text") or "").strip()),
        )
        return target, source, command.get("trigger_id"), ()

    async def _journal(
        self,
        received: Received,
        record: dict[str, Any],
        claim: str | None,
    ) -> None:
        """Journal the input before Slack is acknowledged, then run it in the background."""
        entry = await self._accept(received[0].conversation, record, claim)
        if entry is not None:
            self._spawn(self._handle(received, entry))

    async def _accept(
        self, conversation: str, record: dict[str, Any], claim: str | None
    ) -> Entry | None:
        """The input's journal entry; None when it was delivered before."""
        entry = await self.gateway.accept(self.name, conversation, record, claim)
        if entry is None:
            self.gateway.metrics.dedupe_hit(self.name)
        return entry

    async def _input(self, received: Received) -> tuple[InboundMessage, SlackSink]:
        """The message and its sink."""
        return await self._message(received), self._sink(received[0])

    async def _message(self, received: Received) -> InboundMessage:
        """The message, its files fetched (AttachmentError when they cannot be)."""
        target, text, message_id, files = received
        attachments: tuple[Attachment, ...] = ()
        if files:
            assert self.outbox.session is not None  # made at start
            attachments = await self.files.fetch(self.outbox.session, files)
        return InboundMessage(
            channel=self.name,
            conversation=target.conversation,
            user=target.user,
            text=text,
            message_id=message_id,
            attachments=attachments,
            meta={"team": target.team},
        )

    def _sink(self, target: Target) -> SlackSink:
        return SlackSink(self.outbox, target, self.settings.show_reasoning != "off")

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        record = entry.body
        received: Received | None = None
        if record.get("kind") == "message":
            received = self._message_input(record["body"], record["event"], record.get("bot"))
        elif record.get("kind") == "command":
            received = self._command_input(record["command"])
        if received is None:
            return None
        try:
            return await self._input(received)
        except AttachmentError as exc:
            log.warning("a journaled Slack message cannot run again: %s", exc)
            return None

    async def _handle(self, received: Received, entry: Entry) -> None:
        sink = self._sink(received[0])
        try:
            await self.gateway.handle(await self._message(received), sink, entry)
        except AttachmentError as exc:  # one reply; nothing goes to the runtime
            await sink.final(self.gateway.failure_reply("invalid", None, str(exc)))
        except Exception as exc:  # a bug in the pipeline still reaches the user, once
            log.exception("handling a Slack message failed")
            if not sink.finished:
                error = str(exc) or type(exc).__name__
                await sink.final(self.gateway.failure_reply("generic", None, error))
        except asyncio.CancelledError:  # still running when the channel stopped
            if not sink.finished:
                await sink.final(self.gateway.failure_reply("generic", None, STOPPED))
            raise
        finally:
            sink.close()
            if sink.finished:  # told: nothing left to recover (else the next start runs it)
                await self.gateway.journal.finish(entry)

    async def _say_usage(self, response_url: str | None) -> None:
        if response_url:
            body = {"response_type": "ephemeral", "text": umbrella_usage(self._umbrella)}
            await respond(self.outbox.session, response_url, body)
