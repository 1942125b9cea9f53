"""How the fake platform servers fail a call, as real servers and networks do; and what the
gateway logged about it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Literal

from aiohttp import web

# page: an HTML page (a proxy's error page, or a server that is not the platform's API);
# drop: the connection closed before the call is processed; cut: the call processed, its
# answer cut off half-way (the client cannot know it went through); hang: no answer until
# the client gives up.
Kind = Literal["page", "drop", "cut", "hang"]
HANG = 10.0  # seconds a hanging call waits at most (then a 504)


def page(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=f"<html><body><pre>{text}</pre></body></html>",
                        content_type="text/html")  # fmt: skip


def drop(request: web.Request) -> web.Response:
    """Close the connection without an answer (aiohttp writes nothing to it afterwards)."""
    assert request.transport is not None
    request.transport.abort()
    return web.Response()


async def hang() -> web.Response:
    await asyncio.sleep(HANG)
    return web.Response(status=504)


async def cut_off(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
    """Half of the JSON answer, then the connection closed."""
    data = json.dumps(body).encode()
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.content_length = len(data)
    await response.prepare(request)
    await response.write(data[: len(data) // 2])
    assert request.transport is not None
    request.transport.abort()
    return response


def trouble(records: list[logging.LogRecord]) -> list[logging.LogRecord]:
    """What the gateway logged at WARNING or above, or with a traceback; not the start-up's
    warning that a channel runs open (the tests' OPEN_ACCESS asks for that).
    """
    return [
        r
        for r in records
        if r.name.startswith("slashgate")
        and (r.levelno >= logging.WARNING or r.exc_info)
        and not started_open(r)
    ]


def started_open(record: logging.LogRecord) -> bool:
    """The start-up's warning that a chat channel's access policy is open."""
    return record.name == "slashgate" and record.getMessage().startswith("access: ")
