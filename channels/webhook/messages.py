"""``POST /v1/messages``: a message (JSON, or a form with files) becomes an input of the
gateway; its answer is JSON or server-sent events, kept under its Idempotency-Key if it has one.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from channels.endpoint import Answer, error_answer, media_type, response
from gateway.api import Attachment, Channel, Entry, InboundMessage, ReplySink
from gateway.attachments import AttachmentError
from gateway.body import BodyError, token_header

from .answer import answer_json, big_answer, send, small
from .checks import JSON, Bearer, Route, checked_files, parse
from .errors import ApiError
from .files import WebhookFiles
from .idempotency import Idempotency, Keys
from .settings import WebhookSettings
from .sinks import EVENT_STREAM, AnswerSink, EventStreamSink
from .wire import MessageIn, outcome_body

log = logging.getLogger("slashgate.webhook")

REPLAYED = {"Idempotent-Replayed": "true"}  # the first request's answer again


def upload_record(upload: Attachment) -> dict[str, Any]:
    """An uploaded file as the journal keeps it until its request is answered."""
    data = base64.b64encode(upload.data or b"").decode()
    return {"name": upload.name, "media_type": upload.media_type, "data": data}


def upload_from(record: dict[str, Any]) -> Attachment:
    return Attachment(record["name"], record["media_type"], base64.b64decode(record["data"]))


class Messages(Route):
    def __init__(self, channel: Channel[WebhookSettings], bearer: Bearer) -> None:
        super().__init__(channel, bearer)
        self.files = WebhookFiles(self.settings)
        self.keys = Keys(channel)

    async def post(self, request: web.Request) -> web.StreamResponse:
        """The aiohttp route: a JSON body answered with JSON goes to ``take``, the core; a form
        with files, or an answer in server-sent events, needs the request itself.
        """
        headers = request.headers
        self.authorize(headers)
        streaming = "text/event-stream" in headers.get("Accept", "")
        if not streaming and request.content_type != "multipart/form-data":
            body = await self.read(request, files=True)
            answer = await self.take(body, headers)
            # The usual answer sent here, without a coroutine more.
            return response(answer) if small(answer) else await send(request, answer)
        return await self._post(request, streaming)

    async def answer(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        """``POST /v1/messages`` with a JSON body, answered with JSON: the body as sent, the
        request's headers (its token, media type, Idempotency-Key) in, the answer out.
        """
        try:
            self.authorize(headers)
            if media_type(headers) != JSON:
                raise self.not_json(headers, files=True)
        except ApiError as exc:
            return error_answer(exc.status, exc.code, exc.message)
        return await self.take(body, headers)

    async def take(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        """A JSON body, once authorized: run, and answered (or replayed under its key)."""
        try:
            key = token_header(headers, "Idempotency-Key")  # it goes to the store: ASCII only
            message = parse(body, MessageIn)
            idempotency, entry = None, None
            if key:
                idempotency = Idempotency(key, hashlib.sha256(body).digest().hex())
                entry = await self._claim(message, key, idempotency)
                if entry is None:
                    replay = await self.keys.replay(idempotency)
                    return answer_json(replay, REPLAYED) or await big_answer(replay, REPLAYED)
            answer = await self._run(message, None, idempotency, entry)
        except (ApiError, BodyError) as exc:
            return error_answer(exc.status, exc.code, exc.message)
        # The turn is done: its answer is kept.
        return answer_json(answer) or await big_answer(answer)

    async def _post(self, request: web.Request, streaming: bool) -> web.StreamResponse:
        """A form with files, or an answer in server-sent events."""
        key = token_header(request.headers, "Idempotency-Key")
        uploaded: tuple[Attachment, ...] | None = None
        fingerprint = ""
        if request.content_type == "multipart/form-data":
            message, uploaded, fingerprint = await checked_files(self.files.read_multipart(request))
        else:
            body = await self.read(request, files=True)
            message = parse(body, MessageIn)
            if key:
                fingerprint = hashlib.sha256(body).digest().hex()
        idempotency, entry = None, None
        if key:
            idempotency = Idempotency(key, fingerprint)
            entry = await self._claim(message, key, idempotency, uploaded)
            if entry is None:
                replay = await self.keys.replay(idempotency)
                return await self._replayed(request, replay, streaming)
        if not streaming:
            answer = await self._run(message, uploaded, idempotency, entry)
            return await send(request, answer_json(answer) or await big_answer(answer))
        try:
            if uploaded is None:
                uploaded = await self._fetched(message) if message.attachments else ()
            inbound = self._inbound(message, uploaded)
            return await self._stream(request, inbound, idempotency, entry)
        except BaseException:
            await self._forget(idempotency, entry)
            raise

    async def _run(
        self,
        message: MessageIn,
        uploaded: tuple[Attachment, ...] | None,
        idempotency: Idempotency | None,
        entry: Entry | None,
    ) -> dict[str, Any]:
        """The turn, and its answer (a ``MessageOut``); a key whose turn failed is freed."""
        try:
            if uploaded is None:
                uploaded = await self._fetched(message) if message.attachments else ()
            inbound = self._inbound(message, uploaded)
            sink = AnswerSink(self.keys, inbound.conversation, idempotency)
            outcome = await self.gateway.handle(inbound, sink, entry)
        except BaseException:
            await self._forget(idempotency, entry)
            raise
        return sink.body or outcome_body(inbound.conversation, outcome)

    async def _forget(self, idempotency: Idempotency | None, entry: Entry | None) -> None:
        if idempotency is not None and entry is not None:
            await self.keys.forget(idempotency, entry)

    async def _claim(
        self,
        message: MessageIn,
        key: str,
        idempotency: Idempotency,
        uploaded: tuple[Attachment, ...] | None = None,
    ) -> Entry | None:
        """The request journaled under its key; None when the key was used before."""
        record = {
            "message": message.model_dump(mode="json"),
            "uploads": None if uploaded is None else [upload_record(f) for f in uploaded],
            "key": key,
            "fingerprint": idempotency.fingerprint,
        }
        return await self.keys.claim(message.conversation, idempotency, record)

    async def _fetched(self, message: MessageIn) -> tuple[Attachment, ...]:
        """The files of a JSON body (their data decoded, their URLs fetched)."""
        return await checked_files(self.files.resolve(message.attachments))

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
        response = web.StreamResponse(headers=EVENT_STREAM)
        await response.prepare(request)
        reasoning = self.settings.show_reasoning != "off"
        sink = EventStreamSink(self.keys, response, message.conversation, idempotency, reasoning)
        outcome = await self.gateway.handle(message, sink, entry)
        await sink.finish(outcome)
        return response

    async def _replayed(
        self, request: web.Request, body: dict[str, Any], streaming: bool
    ) -> web.StreamResponse:
        """The first request's answer again, marked as a replay."""
        if not streaming:
            answer = answer_json(body, REPLAYED) or await big_answer(body, REPLAYED)
            return await send(request, answer)
        response = web.StreamResponse(headers={**REPLAYED, **EVENT_STREAM})
        await response.prepare(request)
        sink = EventStreamSink(self.keys, response, body["conversation"])
        await sink.send(
            "accepted", {k: body[k] for k in ("conversation", "classification", "forwarded")}
        )
        await sink.send("reply", body)
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
        sink = AnswerSink(self.keys, message.conversation, idempotency)
        return self._inbound(message, files), sink
