"""``POST /v1/messages``: a message (JSON, or a form with files) becomes an input of the
gateway; its answer is JSON or server-sent events, kept under its Idempotency-Key if it has one.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from typing import Any

from aiohttp import web

from gateway.api import Attachment, Channel, Entry, InboundMessage, ReplySink
from gateway.attachments import AttachmentError
from gateway.body import token_header

from .answer import respond
from .checks import Bearer, Route, checked_files, parse
from .files import WebhookFiles
from .idempotency import Idempotency, Keys
from .settings import WebhookSettings
from .sinks import EVENT_STREAM, AnswerSink, EventStreamSink
from .wire import MessageIn, outcome_body

log = logging.getLogger("slashgate.webhook")


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
        self.authorize(request)
        key = token_header(request, "Idempotency-Key")  # it goes to the store: ASCII only
        uploaded: tuple[Attachment, ...] | None = None
        fingerprint = ""
        if request.content_type == "multipart/form-data":
            message, uploaded, fingerprint = await checked_files(self.files.read_multipart(request))
        else:
            body = await self.read(request, files=True)
            message = parse(body, MessageIn)
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
            entry = await self.keys.claim(message.conversation, idempotency, record)
            if entry is None:
                replay = await self.keys.replay(idempotency)
                return await self._replayed(request, replay, streaming)
        try:
            if uploaded is None:
                uploaded = (
                    await checked_files(self.files.resolve(message.attachments))
                    if message.attachments
                    else ()
                )
            inbound = self._inbound(message, uploaded)
            if streaming:
                return await self._stream(request, inbound, idempotency, entry)
            sink = AnswerSink(self.keys, inbound.conversation, idempotency)
            outcome = await self.gateway.handle(inbound, sink, entry)
            answer = sink.body or outcome_body(inbound.conversation, outcome)
        except BaseException:
            if idempotency is not None and entry is not None:
                await self.keys.forget(idempotency, entry)
            raise
        return await respond(request, answer)  # the turn is done: its answer is kept

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
        headers = {"Idempotent-Replayed": "true"}
        if not streaming:
            return await respond(request, body, headers)
        response = web.StreamResponse(headers={**headers, **EVENT_STREAM})
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
