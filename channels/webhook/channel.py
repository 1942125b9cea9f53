"""Plain HTTP: ``POST /v1/messages`` (JSON or server-sent events) and ``GET /v1/commands``."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, ValidationError

from contract import Classification, ComposerInputMessage, complete
from gateway.attachments import AttachmentError
from gateway.body import BodyError, header_bytes, parse_json, read_body, token_header
from gateway.channel import ERROR_ANSWERS, Channel
from gateway.config import Settings
from gateway.core import Gateway
from gateway.events import RuntimeEvent
from gateway.inbound import Attachment, InboundMessage, Outcome, Reply, ReplySink
from gateway.openapi import document
from gateway.state import Entry, StoreUnavailable
from gateway.store import BoundedTTLMap

from .answer import accepted_data, answer_body, event_frame, respond, stored_answer, write
from .docs import operations
from .events import sse_event
from .files import RequestProblem, WebhookFiles, refusal
from .permissions import PermissionAnswer, answer
from .wire import (
    ClassifyIn,
    CompleteQuery,
    MessageIn,
    commands_body,
    completion_body,
    describe_validation_error,
    error_body,
    outcome_body,
    preview_body,
)

log = logging.getLogger("slashgate.webhook")

T = TypeVar("T")
Body = TypeVar("Body", bound=BaseModel)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def response(self) -> web.Response:
        return web.json_response(error_body(self.code, self.message), status=self.status)


def json_errors(request: web.Request, exc: Exception) -> web.Response | None:
    """Every failure under /v1 is a JSON error body; a bug is a 500 with no details leaked
    (the server's middleware asks this first: ``ERROR_ANSWERS``).
    """
    if not request.path.startswith("/v1/"):
        return None
    if isinstance(exc, ApiError):
        return exc.response()
    if isinstance(exc, BodyError):  # a header or a body the shared checks refused
        return web.json_response(error_body(exc.code, exc.message), status=exc.status)
    if not isinstance(exc, web.HTTPException) or exc.status < 400:
        return None
    code = exc.reason.lower().replace(" ", "_")
    headers = {k: v for k, v in exc.headers.items() if k.lower() == "allow"}
    return web.json_response(error_body(code, exc.reason), status=exc.status, headers=headers)


@dataclass(frozen=True, slots=True)
class Idempotency:
    key: str
    fingerprint: str  # of the request body: the same key with another body is refused

    @property
    def claim(self) -> str:
        return f"webhook:idempotency:{self.key}"


class AnswerSink(ReplySink):
    """Keeps the answer body, and stores it under the request's Idempotency-Key before the
    journal lets go of the input: a retry after a crash finds it.
    """

    def __init__(
        self, channel: WebhookChannel, conversation: str, idempotency: Idempotency | None
    ) -> None:
        self.channel = channel
        self.conversation = conversation
        self.idempotency = idempotency
        self.body: dict[str, Any] | None = None

    async def completed(self, outcome: Outcome) -> None:
        self.body = await answer_body(self.conversation, outcome)
        if self.idempotency is not None:
            await self.channel.store_answer(self.idempotency, self.body)


class EventStreamSink(AnswerSink):
    """Server-sent events: ``accepted``, ``delta``..., tool/permission/status, then ``reply``."""

    def __init__(
        self,
        channel: WebhookChannel,
        response: web.StreamResponse,
        conversation: str,
        idempotency: Idempotency | None = None,
        reasoning: bool = True,
    ) -> None:
        super().__init__(channel, conversation, idempotency)
        self.response = response
        self.reasoning = reasoning
        self.sent_accepted = False
        self.gone = False

    async def send(self, event: str, data: dict[str, Any]) -> None:
        if self.gone:
            return
        frame = await event_frame(event, data)
        try:
            await write(self.response, frame)
        except ConnectionResetError:
            # The client left; the turn goes on (its reply is still replayable by key).
            self.gone = True

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self.sent_accepted = True
        await self.send(
            "accepted", await accepted_data(self.conversation, classification, forwarded)
        )

    async def delta(self, text: str) -> None:
        await self.send("delta", {"text": text})

    async def event(self, event: RuntimeEvent) -> None:
        sent = sse_event(event, self.reasoning)
        if sent is not None:
            await self.send(*sent)


def upload_record(upload: Attachment) -> dict[str, Any]:
    """An uploaded file as the journal keeps it until its request is answered."""
    data = base64.b64encode(upload.data or b"").decode()
    return {"name": upload.name, "media_type": upload.media_type, "data": data}


def _validate(model: type[Body], data: dict[str, Any]) -> Body:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", describe_validation_error(exc)) from None


def upload_from(record: dict[str, Any]) -> Attachment:
    return Attachment(record["name"], record["media_type"], base64.b64decode(record["data"]))


class WebhookChannel(Channel):
    name = "webhook"

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        super().__init__(gateway, settings)
        token = settings.webhook_token
        self._token = token.get_secret_value().encode() if token else None
        self.files = WebhookFiles(settings)
        # Answers still being made here, by key: a repeat waits for the first one's answer.
        self._running: BoundedTTLMap[asyncio.Future[dict[str, Any]]] = BoundedTTLMap(
            settings.idempotency_size, settings.idempotency_ttl
        )

    def mount(self, app: web.Application) -> None:
        app[ERROR_ANSWERS].append(json_errors)
        app.router.add_post("/v1/messages", self.post_message)
        app.router.add_get("/v1/commands", self.get_commands)
        app.router.add_get("/v1/complete", self.get_complete)
        app.router.add_post("/v1/classify", self.post_classify)
        app.router.add_post("/v1/permissions/{request_id}", self.post_permission)
        document(app, *operations(bearer=self._token is not None))

    def describe(self) -> str:
        auth = "bearer token" if self._token else "no auth"
        return (
            "webhook (POST /v1/messages, GET /v1/commands, GET /v1/complete, "
            f"POST /v1/classify, POST /v1/permissions; {auth})"
        )

    # -- request checks -------------------------------------------------------------------

    def _authorize(self, request: web.Request) -> None:
        if self._token is None:
            return
        scheme, _, presented = header_bytes(request, "Authorization").partition(b" ")
        ok = scheme.lower() == b"bearer" and hmac.compare_digest(presented.strip(), self._token)
        if not ok:
            raise ApiError(401, "unauthorized", "missing or wrong Authorization: Bearer token")

    async def _read_body(self, request: web.Request) -> bytes:
        try:
            return await read_body(request, self.settings.webhook_max_body)
        except BodyError as exc:
            raise ApiError(exc.status, exc.code, exc.message) from None

    @staticmethod
    def _parse(body: bytes, model: type[Body]) -> Body:
        try:
            return model.model_validate_json(body)  # a good body: parsed and checked at once
        except ValidationError:
            pass  # a bad one is read again below, so that the error says what was wrong
        data = parse_json(body)
        if not isinstance(data, dict):
            raise ApiError(400, "invalid_request", "request body must be a JSON object")
        return _validate(model, data)

    # -- routes ---------------------------------------------------------------------------

    async def post_message(self, request: web.Request) -> web.StreamResponse:
        self._authorize(request)
        key = token_header(request, "Idempotency-Key")  # it goes to the store: ASCII only
        uploaded: tuple[Attachment, ...] | None = None
        fingerprint = ""
        if request.content_type == "multipart/form-data":
            message, uploaded, fingerprint = await self._files(self.files.read_multipart(request))
        else:
            body = await self._read_body(request)
            message = self._parse(body, MessageIn)
        streaming = "text/event-stream" in request.headers.get("Accept", "")
        idempotency, entry = None, None
        if key:
            if uploaded is None:
                fingerprint = hashlib.sha256(body).digest().hex()
            idempotency = Idempotency(key, fingerprint)
            record = {
                "message": message.model_dump(mode="json"),
                "uploads": None if uploaded is None else [upload_record(f) for f in uploaded],
                "key": key,
                "fingerprint": fingerprint,
            }
            entry = await self._journal(message.conversation, idempotency, record)
            if entry is None:
                replay = await self._replay(idempotency)
                return await self._respond_replay(request, replay, streaming)
            self._running.set(key, asyncio.get_running_loop().create_future())
        try:
            if uploaded is None:
                uploaded = (
                    await self._files(self.files.resolve(message.attachments))
                    if message.attachments
                    else ()
                )
            inbound = self._inbound(message, uploaded)
            if streaming:
                return await self._stream(request, inbound, idempotency, entry)
            sink = AnswerSink(self, inbound.conversation, idempotency)
            outcome = await self.gateway.handle(inbound, sink, entry)
            answer = sink.body or outcome_body(inbound.conversation, outcome)
        except BaseException:
            if idempotency is not None and entry is not None:
                await self._forget(idempotency, entry)
            raise
        return await respond(request, answer)  # the turn is done: its answer is kept

    async def _journal(
        self, conversation: str, idempotency: Idempotency, record: dict[str, Any]
    ) -> Entry | None:
        """Journal a request that has an Idempotency-Key (without one, nothing could fetch
        its answer after a crash); None when the key was used before.
        """
        try:
            return await self.gateway.accept(
                self.name,
                conversation,
                record,
                claim=idempotency.claim,
                value={"fingerprint": idempotency.fingerprint},
            )
        except StoreUnavailable as exc:
            log.warning("cannot journal a request: %s", exc)
            raise ApiError(
                503, "unavailable", "the gateway's store is unavailable; retry"
            ) from None

    async def post_permission(self, request: web.Request) -> web.Response:
        self._authorize(request)
        body = self._parse(await self._read_body(request), PermissionAnswer)
        status, data = await answer(self.gateway, self.name, request.match_info["request_id"], body)
        return web.json_response(data, status=status)

    async def get_commands(self, request: web.Request) -> web.Response:
        self._authorize(request)
        conversation = request.query.get("conversation")
        commands = await self.gateway.commands(
            self.name if conversation else None, conversation or None
        )
        return web.json_response(commands_body(commands, self.settings.interactive_only))

    async def get_complete(self, request: web.Request) -> web.Response:
        """What fits at the cursor: the conversation's commands, or reference prefixes."""
        self._authorize(request)
        # An empty parameter (``cursor=``) is the same as none.
        query = _validate(CompleteQuery, {k: v for k, v in request.query.items() if v != ""})
        conversation = query.conversation
        commands = await self.gateway.commands(self.name if conversation else None, conversation)
        try:
            completion = complete(
                query.text, query.cursor, commands, self.settings.interactive_only, query.limit
            )
        except ValueError as exc:
            raise ApiError(400, "invalid_request", str(exc)) from None
        return web.json_response(completion_body(conversation, completion))

    async def post_classify(self, request: web.Request) -> web.Response:
        """The classification and payload ``POST /v1/messages`` would give; nothing runs."""
        self._authorize(request)
        data = self._parse(await self._read_body(request), ClassifyIn)
        inbound = InboundMessage(self.name, data.conversation, "", data.text)
        outcome = await self.gateway.preview(inbound)
        return web.json_response(preview_body(data.conversation, outcome))

    @staticmethod
    async def _files(reading: Awaitable[T]) -> T:
        """Files read or fetched; a refused one is the client's error (4xx), never a 5xx."""
        try:
            return await reading
        except RequestProblem as exc:
            raise ApiError(400, "invalid_request", str(exc)) from None
        except AttachmentError as exc:
            raise ApiError(*refusal(exc), str(exc)) from None

    def _inbound(self, message: MessageIn, files: tuple[Attachment, ...]) -> InboundMessage:
        return InboundMessage(
            channel=self.name,
            conversation=message.conversation,
            user=message.user,
            text=message.text,
            message_id=message.id,
            attachments=files,
        )

    async def _stream(
        self,
        request: web.Request,
        message: InboundMessage,
        idempotency: Idempotency | None,
        entry: Entry | None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        await response.prepare(request)
        reasoning = self.settings.show_reasoning != "off"
        sink = EventStreamSink(self, response, message.conversation, idempotency, reasoning)
        outcome = await self.gateway.handle(message, sink, entry)
        body = sink.body or outcome_body(message.conversation, outcome)
        if not sink.sent_accepted:
            await sink.accepted(outcome.classification, outcome.forwarded)
        await sink.send("reply", body)
        if not sink.gone:
            await response.write_eof()
        return response

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        """After a restart the caller is gone: the answer is kept for its retry (same key).
        Files come from the journal (uploads) or are fetched again (URLs).
        """
        record = entry.body
        try:
            uploads = record["uploads"]
            files = None if uploads is None else tuple(map(upload_from, uploads))
            message = MessageIn.model_validate(
                record["message"], context={"files": len(files or ())}
            )
            idempotency = Idempotency(record["key"], record["fingerprint"])
            if files is None:
                files = await self.files.resolve(message.attachments)
        except (KeyError, TypeError, ValueError, AttachmentError) as exc:
            log.warning("a journaled request cannot run again: %s", exc)
            return None
        sink = AnswerSink(self, message.conversation, idempotency)
        return self._inbound(message, files), sink

    # -- Idempotency-Key ------------------------------------------------------------------

    async def store_answer(self, idempotency: Idempotency, body: dict[str, Any]) -> None:
        value = await stored_answer(idempotency.fingerprint, body)
        await self.gateway.store.remember(idempotency.claim, value, self.settings.idempotency_ttl)
        first = self._running.pop(idempotency.key)
        if first is not None and not first.done():
            first.set_result(body)

    async def _replay(self, idempotency: Idempotency) -> dict[str, Any]:
        """The first answer for the key: stored, or awaited while the first request runs (here,
        or on another replica, or recovered after a restart).
        """
        held = await self._held(idempotency)
        if "answer" in held:
            return dict(held["answer"])
        first = self._running.get(idempotency.key)
        if first is not None:
            return await asyncio.shield(first)
        deadline = asyncio.get_running_loop().time() + self._patience
        delay = 0.02
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
            held = await self._held(idempotency)
            if "answer" in held:
                return dict(held["answer"])
        raise ApiError(
            409, "idempotency_pending", "the first request with this Idempotency-Key still runs"
        )

    @property
    def _patience(self) -> float:
        """How long a repeat waits for the first request's answer: its whole turn at most."""
        return self.settings.run_timeout + 2 * self.settings.cancel_grace

    async def _held(self, idempotency: Idempotency) -> dict[str, Any]:
        try:
            held = await self.gateway.store.recall(idempotency.claim)
        except StoreUnavailable:
            raise ApiError(
                503, "unavailable", "the gateway's store is unavailable; retry"
            ) from None
        if held is None:
            raise ApiError(
                409,
                "idempotency_failed",
                "the first request with this Idempotency-Key failed; retry with a new key",
            )
        if held.get("fingerprint") != idempotency.fingerprint:
            raise ApiError(
                422, "idempotency_mismatch", "Idempotency-Key was already used with another body"
            )
        self.gateway.metrics.dedupe_hit(self.name)
        return dict(held)

    async def _forget(self, idempotency: Idempotency, entry: Entry) -> None:
        """The first request failed (a bug, or it was cancelled): its key may be used again."""
        first = self._running.pop(idempotency.key)
        if first is not None and not first.done():
            first.set_exception(
                ApiError(
                    409,
                    "idempotency_failed",
                    "the first request with this Idempotency-Key failed; retry with a new key",
                )
            )
            first.exception()  # mark retrieved: nobody may be waiting
        try:
            await self.gateway.store.forget(idempotency.claim)
        except StoreUnavailable:
            log.warning("Idempotency-Key of a failed request not forgotten")
        await self.gateway.journal.finish(entry)

    async def _respond_replay(
        self, request: web.Request, body: dict[str, Any], streaming: bool
    ) -> web.StreamResponse:
        headers = {"Idempotent-Replayed": "true"}
        if not streaming:
            return await respond(request, body, headers)
        response = web.StreamResponse(
            headers={
                **headers,
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
            }
        )
        await response.prepare(request)
        sink = EventStreamSink(self, response, body["conversation"])
        await sink.send(
            "accepted", {k: body[k] for k in ("conversation", "classification", "forwarded")}
        )
        await sink.send("reply", body)
        await response.write_eof()
        return response


__all__ = ["Reply", "WebhookChannel"]
