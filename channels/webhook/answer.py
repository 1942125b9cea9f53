"""The answer to ``POST /v1/messages`` (JSON or server-sent events); a big one off the event
loop (issue 10).

A 1 MiB message's answer is some 6 MB of JSON (its forwarded nodes, the reply), and its
events as much each. Built, encoded and written on the loop, it held it for 150 ms. Above
``offload.THRESHOLD`` characters of text the body is built and encoded in a worker thread in
slices (``gateway/jsonslices.py``), and written ``WRITE`` bytes at a time. The bytes are the
same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from channels.endpoint import JSON, Answer, response
from contract import Classification, ComposerInputMessage
from gateway import jsonslices, offload
from gateway.api import Encoded, Outcome

from .wire import accepted_body, outcome_body

_encode = jsonslices.encoder()  # json.dumps
_encode_utf8 = jsonslices.encoder(ensure_ascii=False)


WRITE = 256 * 1024  # bytes per write: the socket takes them, or the writer waits
_JSON = {"Content-Type": JSON}


def answer_size(body: dict[str, Any]) -> int:
    """Characters of text in an answer (or ``accepted``) body: its forwarded source and its
    reply, what makes it big.
    """
    forwarded, reply = body.get("forwarded"), body.get("reply")
    return (len(forwarded["payload"]["source"]) if forwarded else 0) + (
        len(reply["text"]) if reply else 0
    )


def answer_body(conversation: str, outcome: Outcome) -> dict[str, Any] | None:
    """``outcome_body``; None for a big answer, which ``big_answer_body`` builds in a thread
    (the usual case without a coroutine).
    """
    if _outcome_size(outcome) >= offload.THRESHOLD:
        return None
    return outcome_body(conversation, outcome)


async def big_answer_body(conversation: str, outcome: Outcome) -> dict[str, Any]:
    return await offload.off_loop(_outcome_size(outcome), outcome_body, conversation, outcome)


def _outcome_size(outcome: Outcome) -> int:
    """Characters of text in an outcome's answer: its forwarded source and its reply."""
    forwarded, reply = outcome.forwarded, outcome.reply
    return (len(forwarded.payload.source) if forwarded else 0) + (len(reply.text) if reply else 0)


async def accepted_data(
    conversation: str, classification: Classification, forwarded: ComposerInputMessage | None
) -> dict[str, Any]:
    """``accepted_body``; a big one's in a thread."""
    size = len(forwarded.payload.source) if forwarded else 0
    return await offload.off_loop(size, accepted_body, conversation, classification, forwarded)


async def stored_answer(fingerprint: str, body: dict[str, Any]) -> dict[str, Any] | Encoded:
    """What an Idempotency-Key keeps for a replay: a big one encoded in a thread, in ASCII
    (non-ASCII characters escaped, as in the answer itself): a replay reads it back without
    decoding 6 MB of UTF-8 into a string of four bytes a character in one call (11 ms).
    """
    value = {"fingerprint": fingerprint, "answer": body}
    size = answer_size(body)
    if size < offload.THRESHOLD:
        return value
    return await offload.off_loop(size, _encoded, value)


def _encoded(value: dict[str, Any]) -> Encoded:
    return Encoded(jsonslices.dump_bytes(value))


def answer_json(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Answer | None:
    """The answer ``body`` (a ``MessageOut``), as ``json.dumps`` encodes it; None for a big
    one, which ``big_answer`` encodes in a thread (the usual case without a coroutine).
    """
    if answer_size(body) >= offload.THRESHOLD:
        return None
    return Answer(200, _encode(body).encode(), {**_JSON, **headers} if headers else _JSON)


async def big_answer(body: dict[str, Any], headers: Mapping[str, str] | None = None) -> Answer:
    """``answer_json`` of a big answer, encoded in a thread."""
    data = await offload.off_loop(answer_size(body), sliced_json, body)
    return Answer(200, data, {**_JSON, **(headers or {})})


def small(answer: Answer) -> bool:
    """Sent in one write (``endpoint.response``), not ``WRITE`` bytes at a time."""
    return len(answer.body) <= WRITE


async def send(request: web.Request, answer: Answer) -> web.StreamResponse:
    """``answer`` as aiohttp sends it; a big one written ``WRITE`` bytes at a time."""
    if small(answer):
        return response(answer)
    sent = web.StreamResponse(status=answer.status, headers=answer.headers)
    sent.content_length = len(answer.body)
    await sent.prepare(request)
    try:
        await write(sent, answer.body)
        await sent.write_eof()
    except ConnectionResetError:
        pass  # the client left: as for an answer aiohttp writes, nothing to do
    return sent


async def write(response: web.StreamResponse, data: bytes) -> None:
    """``response.write(data)``, ``WRITE`` bytes a call (one 6.4 MB write held the loop 25-35
    ms); small data in one.
    """
    if len(data) <= WRITE:
        await response.write(data)
        return
    view = memoryview(data)
    for start in range(0, len(data), WRITE):
        await response.write(view[start : start + WRITE])


def sliced_json(body: dict[str, Any]) -> bytes:
    """``json.dumps(body).encode()``, encoded in pieces."""
    return jsonslices.dump_bytes(body)


async def event_frame(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event; a big one (``accepted``, ``reply``, a long ``delta``) encoded
    in a thread.
    """
    text = data.get("text")  # a delta's, a reasoning's
    size = answer_size(data) + (len(text) if isinstance(text, str) else 0)
    if size < offload.THRESHOLD:
        return f"event: {event}\ndata: {_encode_utf8(data)}\n\n".encode()
    return await offload.off_loop(size, _big_frame, event, data)


def _big_frame(event: str, data: dict[str, Any]) -> bytes:
    payload = jsonslices.dump_bytes(data, ensure_ascii=False)
    return b"".join((f"event: {event}\ndata: ".encode(), payload, b"\n\n"))
