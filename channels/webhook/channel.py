"""Plain HTTP: ``POST /v1/messages`` (JSON or server-sent events) and ``GET /v1/commands``."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from contract import Classification, ComposerInputMessage
from gateway.channel import Channel
from gateway.config import Settings
from gateway.core import Gateway
from gateway.events import (
    PermissionRequired,
    RuntimeEvent,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
)
from gateway.inbound import InboundMessage, Outcome, Reply, ReplySink
from gateway.store import BoundedTTLMap

from .wire import (
    MessageIn,
    classification_body,
    command_body,
    describe_validation_error,
    error_body,
    forwarded_body,
    reply_body,
)

log = logging.getLogger("slashgate.webhook")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def response(self) -> web.Response:
        return web.json_response(error_body(self.code, self.message), status=self.status)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure under /v1 is a JSON error body; a bug is a 500 with no details leaked."""
    if not request.path.startswith("/v1/"):
        return await handler(request)
    try:
        return await handler(request)
    except ApiError as exc:
        return exc.response()
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = exc.reason.lower().replace(" ", "_")
        return web.json_response(error_body(code, exc.reason), status=exc.status)


def outcome_body(conversation: str, outcome: Outcome) -> dict[str, Any]:
    return {
        "conversation": conversation,
        "classification": classification_body(outcome.classification),
        "forwarded": forwarded_body(outcome.forwarded),
        "reply": reply_body(outcome.reply),
    }


class EventStreamSink(ReplySink):
    """Server-sent events: ``accepted``, ``delta``..., tool/permission/status, then ``reply``."""

    def __init__(self, response: web.StreamResponse, conversation: str) -> None:
        self.response = response
        self.conversation = conversation
        self.sent_accepted = False
        self.gone = False

    async def send(self, event: str, data: dict[str, Any]) -> None:
        if self.gone:
            return
        payload = json.dumps(data, ensure_ascii=False)
        try:
            await self.response.write(f"event: {event}\ndata: {payload}\n\n".encode())
        except ConnectionResetError:
            # The client left; the turn goes on (its reply is still replayable by key).
            self.gone = True

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self.sent_accepted = True
        await self.send(
            "accepted",
            {
                "conversation": self.conversation,
                "classification": classification_body(classification),
                "forwarded": forwarded_body(forwarded),
            },
        )

    async def delta(self, text: str) -> None:
        await self.send("delta", {"text": text})

    async def event(self, event: RuntimeEvent) -> None:
        if isinstance(event, (ToolStart, ToolRunning, ToolEnd)):
            await self.send("tool", {"type": type(event).__name__, **_fields(event)})
        elif isinstance(event, PermissionRequired):
            await self.send("permission", _fields(event))
        elif isinstance(event, StatusChanged):
            await self.send("status", _fields(event))


def _fields(event: object) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(event)  # type: ignore[call-overload]


class WebhookChannel(Channel):
    name = "webhook"

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        super().__init__(gateway, settings)
        token = settings.webhook_token
        self._token = token.get_secret_value().encode() if token else None
        self._replays: BoundedTTLMap[tuple[str, asyncio.Future[dict[str, Any]]]] = BoundedTTLMap(
            settings.idempotency_size, settings.idempotency_ttl
        )

    def mount(self, app: web.Application) -> None:
        app.middlewares.append(json_errors)
        app.router.add_post("/v1/messages", self.post_message)
        app.router.add_get("/v1/commands", self.get_commands)

    def describe(self) -> str:
        auth = "bearer token" if self._token else "no auth"
        return f"webhook (POST /v1/messages, GET /v1/commands; {auth})"

    # -- request checks -------------------------------------------------------------------

    def _authorize(self, request: web.Request) -> None:
        if self._token is None:
            return
        header = request.headers.get("Authorization", "")
        scheme, _, presented = header.partition(" ")
        ok = scheme.lower() == "bearer" and hmac.compare_digest(
            presented.strip().encode(), self._token
        )
        if not ok:
            raise ApiError(401, "unauthorized", "missing or wrong Authorization: Bearer token")

    async def _read_body(self, request: web.Request) -> bytes:
        limit = self.settings.webhook_max_body
        if request.content_length is not None and request.content_length > limit:
            raise ApiError(413, "too_large", f"request body over the limit of {limit} bytes")
        body = await request.content.read(limit + 1)
        if len(body) > limit:
            raise ApiError(413, "too_large", f"request body over the limit of {limit} bytes")
        return body

    @staticmethod
    def _parse(body: bytes) -> MessageIn:
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(
                400, "malformed_json", f"request body is not valid JSON: {exc}"
            ) from None
        except RecursionError:
            raise ApiError(400, "malformed_json", "request body is nested too deeply") from None
        if not isinstance(data, dict):
            raise ApiError(400, "invalid_request", "request body must be a JSON object")
        try:
            return MessageIn.model_validate(data)
        except ValidationError as exc:
            raise ApiError(400, "invalid_request", describe_validation_error(exc)) from None

    # -- routes ---------------------------------------------------------------------------

    async def post_message(self, request: web.Request) -> web.StreamResponse:
        self._authorize(request)
        body = await self._read_body(request)
        message = self._parse(body)
        streaming = "text/event-stream" in request.headers.get("Accept", "")
        key = request.headers.get("Idempotency-Key")
        if key:
            replay = await self._replay(key, hashlib.sha256(body).digest().hex())
            if replay is not None:
                return await self._respond_replay(request, replay, streaming)
        try:
            result = await (self._stream(request, message) if streaming else self._json(message))
        except BaseException as exc:
            if key:
                self._forget(key, exc)
            raise
        if key:
            self._remember(key, result[1])
        return result[0]

    async def get_commands(self, request: web.Request) -> web.Response:
        self._authorize(request)
        conversation = request.query.get("conversation")
        commands = await self.gateway.commands(
            self.name if conversation else None, conversation or None
        )
        return web.json_response(
            {
                "commands": [command_body(c) for c in commands],
                "interactive_only": sorted(self.settings.interactive_only),
            }
        )

    def _inbound(self, message: MessageIn) -> InboundMessage:
        return InboundMessage(
            channel=self.name,
            conversation=message.conversation,
            user=message.user,
            text=message.text,
            message_id=message.id,
        )

    async def _json(self, message: MessageIn) -> tuple[web.StreamResponse, dict[str, Any]]:
        outcome = await self.gateway.handle(self._inbound(message))
        body = outcome_body(message.conversation, outcome)
        return web.json_response(body), body

    async def _stream(
        self, request: web.Request, message: MessageIn
    ) -> tuple[web.StreamResponse, dict[str, Any]]:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        sink = EventStreamSink(response, message.conversation)
        outcome = await self.gateway.handle(self._inbound(message), sink)
        body = outcome_body(message.conversation, outcome)
        if not sink.sent_accepted:
            await sink.accepted(outcome.classification, outcome.forwarded)
        await sink.send("reply", body)
        if not sink.gone:
            await response.write_eof()
        return response, body

    # -- Idempotency-Key ------------------------------------------------------------------

    async def _replay(self, key: str, fingerprint: str) -> dict[str, Any] | None:
        """The first answer for ``key`` (awaited if still running), or None to run it now."""
        entry = self._replays.get(key)
        if entry is None:
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._replays.set(key, (fingerprint, future))
            return None
        first_fingerprint, future = entry
        if first_fingerprint != fingerprint:
            raise ApiError(
                422, "idempotency_mismatch", "Idempotency-Key was already used with another body"
            )
        return await asyncio.shield(future)

    def _remember(self, key: str, body: dict[str, Any]) -> None:
        entry = self._replays.get(key)
        if entry is not None and not entry[1].done():
            entry[1].set_result(body)

    def _forget(self, key: str, exc: BaseException) -> None:
        entry = self._replays.pop(key)
        if entry is not None and not entry[1].done():
            entry[1].set_exception(
                ApiError(
                    409,
                    "idempotency_failed",
                    "the first request with this Idempotency-Key failed; retry with a new key",
                )
            )
            entry[1].exception()  # mark retrieved: nobody may be waiting

    async def _respond_replay(
        self, request: web.Request, body: dict[str, Any], streaming: bool
    ) -> web.StreamResponse:
        headers = {"Idempotent-Replayed": "true"}
        if not streaming:
            return web.json_response(body, headers=headers)
        response = web.StreamResponse(
            headers={**headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        sink = EventStreamSink(response, body["conversation"])
        await sink.send(
            "accepted", {k: body[k] for k in ("conversation", "classification", "forwarded")}
        )
        await sink.send("reply", body)
        await response.write_eof()
        return response


__all__ = ["Reply", "WebhookChannel"]
