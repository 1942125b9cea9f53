"""The JSON answer to ``POST /v1/messages``; a big one off the event loop (issue 10).

A 1 MiB message's answer is some 6 MB of JSON (its forwarded nodes, the reply). Built,
encoded and written on the loop, it held it for 150 ms. Above ``offload.THRESHOLD``
characters of text the body is built and encoded in a worker thread, its long lists
``SLICE`` items a call (one C call holds the interpreter until it returns; between calls
the loop gets it back), and written ``WRITE`` bytes at a time. The bytes are the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from gateway import offload
from gateway.inbound import Outcome

from .wire import outcome_body

# json.dumps' output, without its check for cycles (none in a body built here): an answer's
# encoding is a good part of the request's cost.
_encode = json.JSONEncoder(check_circular=False).encode
SLICE = 1000  # list items per encoding call: 1,000 nodes, about 1 ms
WRITE = 256 * 1024  # bytes per write: the socket takes them, or the writer waits


async def answer_body(conversation: str, outcome: Outcome) -> dict[str, Any]:
    """``outcome_body``; a big answer's in a thread."""
    forwarded, reply = outcome.forwarded, outcome.reply
    size = (len(forwarded.payload.source) if forwarded else 0) + (len(reply.text) if reply else 0)
    return await offload.off_loop(size, outcome_body, conversation, outcome)


async def respond(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    """The answer ``body`` (a ``MessageOut``), as ``json.dumps`` encodes it."""
    forwarded, reply = body["forwarded"], body["reply"]
    size = (len(forwarded["payload"]["source"]) if forwarded else 0) + (
        len(reply["text"]) if reply else 0
    )
    if size < offload.THRESHOLD:
        return web.json_response(body, dumps=_encode)
    data = memoryview(await offload.off_loop(size, sliced_json, body))
    response = web.StreamResponse()
    response.content_type, response.charset = "application/json", "utf-8"
    response.content_length = len(data)
    await response.prepare(request)
    try:
        for start in range(0, len(data), WRITE):
            await response.write(data[start : start + WRITE])
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client left: as for an answer aiohttp writes, nothing to do
    return response


def sliced_json(body: dict[str, Any]) -> bytes:
    """``json.dumps(body).encode()``, encoded in pieces."""
    return "".join(_pieces(body)).encode()


def _pieces(value: Any) -> Iterator[str]:
    """``_encode(value)`` in pieces: objects key by key, long lists ``SLICE`` items a call."""
    if isinstance(value, dict) and value:
        separator = "{"
        for key, item in value.items():
            yield f"{separator}{_encode(key)}: "
            yield from _pieces(item)
            separator = ", "
        yield "}"
    elif isinstance(value, list) and len(value) > SLICE:
        yield "["
        for start in range(0, len(value), SLICE):
            yield (", " if start else "") + _encode(value[start : start + SLICE])[1:-1]
        yield "]"
    else:
        yield _encode(value)
