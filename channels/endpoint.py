"""A route a platform (or a client) calls over HTTP, as a core and an adapter, the way hikari's
interaction server is built: the core takes the body as sent and the request's headers and
returns an ``Answer``, with no server in sight (its tests call it directly); the aiohttp
route beside it reads the body within its limit, calls the core and sends the answer.

Headers are a case-insensitive mapping, as a server hands them over (aiohttp's
``request.headers``; ``multidict.CIMultiDict`` in a test).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from channels.errors import error_body
from gateway.body import BodyError, read_body

JSON = "application/json; charset=utf-8"  # what aiohttp's json_response sends


@dataclass(slots=True)  # not frozen: its __init__ would set each field through object's
class Answer:
    """What goes back: the status, the headers (``Content-Type`` among them) and the body."""

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body read as JSON (for a test, or a log line)."""
        return json.loads(self.body)


def json_answer(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Answer:
    """``data`` as ``web.json_response`` would send it: ``json.dumps``, UTF-8."""
    return Answer(status, json.dumps(data).encode(), {"Content-Type": JSON, **(headers or {})})


def error_answer(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Answer:
    """The JSON error body of the gateway's routes (channels/errors.py)."""
    return json_answer(error_body(code, message), status, headers)


def media_type(headers: Mapping[str, str]) -> str:
    """The body's media type without its parameters, lower-cased, as ``request.content_type``
    reads it (``application/octet-stream`` when no Content-Type was sent).
    """
    sent = headers.get("Content-Type")
    if not sent:
        return "application/octet-stream"
    return sent.partition(";")[0].strip().lower()


def response(answer: Answer) -> web.Response:
    """The core's answer as aiohttp sends it."""
    return web.Response(status=answer.status, body=answer.body, headers=answer.headers)


# The body, and what else it reads: a coroutine function (a method that awaits the core's
# answer), not a lambda that returns the answer's coroutine: that takes two calls into the
# channel's file from here where one does.
Core = Callable[[bytes, web.Request], Awaitable[Answer]]


def route(limit: int, core: Core) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp route of ``core``: the body read within ``limit`` bytes, then the core
    asked (it reads the headers, the query, of the request), its answer sent.
    """

    async def handle(request: web.Request) -> web.Response:
        raw = await body_or_answer(request, limit)
        return response(raw if isinstance(raw, Answer) else await core(raw, request))

    return handle


async def body_or_answer(request: web.Request, limit: int) -> bytes | Answer:
    """The request's body (within ``limit`` bytes, decoded), or the error answer that refuses
    it (413, 415, 400), in the error body of the gateway's routes.
    """
    try:
        return await read_body(request, limit)
    except BodyError as exc:
        return error_answer(exc.status, exc.code, exc.message)
