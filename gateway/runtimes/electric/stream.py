"""Reading a Durable Streams stream in JSON mode: catch-up, then long-poll or SSE.

Protocol (electric-sql/electric, packages/durable-streams-rust and website/docs/streams):
``GET {stream}?offset=-1`` answers a JSON array with ``Stream-Next-Offset`` and, once the
reader has everything, ``Stream-Up-To-Date: true``; ``&live=long-poll`` waits for data and
answers ``204`` on timeout; ``&live=sse`` streams ``data`` events (a JSON array each) each
followed by a ``control`` event (``streamNextOffset``, ``streamCursor``, ``upToDate``,
``streamClosed``), and the server ends it about every 60 s. Offsets are opaque strings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from yarl import URL

from .wire import ElectricError

LiveMode = Literal["sse", "long-poll"]

START = "-1"
# Long-polls answer within 30 s and SSE sends a control event at least every 15 s.
READ_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=75)
MAX_EVENT_BYTES = 16 * 1024 * 1024  # one SSE event; a bigger one is a broken stream


@dataclass(slots=True)
class Batch:
    """Events up to ``offset``: apply them, then resume from ``offset``."""

    events: list[dict[str, Any]]
    offset: str
    up_to_date: bool = False
    closed: bool = False


@dataclass(slots=True)
class _Position:
    """Where the next read starts, and the CDN cursor to send back."""

    offset: str
    cursor: str | None = None


async def read(
    http: aiohttp.ClientSession,
    url: URL,
    offset: str,
    live: LiveMode,
    headers: dict[str, str],
) -> AsyncIterator[Batch]:
    """Batches from ``offset`` on, forever (or until the stream closes).

    Catch-up reads come first; once up to date the reader goes live and reconnects by
    itself when the server ends an SSE response. A refused request raises ElectricError,
    a network failure aiohttp's error: the caller resumes from the last offset it applied.
    """
    pos = _Position(offset)
    up_to_date = False
    while not up_to_date:
        batch = await _catch_up(http, url, pos, headers)
        yield batch
        if batch.closed:
            return
        up_to_date = batch.up_to_date
    while True:
        if live == "sse":
            got = False
            async for batch in _sse(http, url, pos, headers):
                got = True
                yield batch
                if batch.closed:
                    return
            if not got:  # a server that hangs up at once: let the caller back off
                raise aiohttp.ClientPayloadError("SSE response ended before any control event")
        else:
            async for batch in _long_poll(http, url, pos, headers):
                yield batch
                if batch.closed:
                    return


async def _get(
    http: aiohttp.ClientSession, url: URL, params: dict[str, str], headers: dict[str, str]
) -> aiohttp.ClientResponse:
    response = await http.get(url, params=params, headers=headers, timeout=READ_TIMEOUT)
    if response.status >= 400:
        async with response:
            raise ElectricError.from_response(response.status, await response.read())
    return response


def _events(body: bytes) -> list[dict[str, Any]]:
    data = json.loads(body) if body.strip() else []
    if not isinstance(data, list):
        raise ValueError("a JSON-mode stream answered something other than an array")
    return [e for e in data if isinstance(e, dict)]


def _advance(pos: _Position, headers: Any) -> tuple[bool, bool]:
    pos.offset = headers.get("Stream-Next-Offset", pos.offset)
    pos.cursor = headers.get("Stream-Cursor", pos.cursor)
    return (
        headers.get("Stream-Up-To-Date", "").lower() == "true",
        headers.get("Stream-Closed", "").lower() == "true",
    )


async def _catch_up(
    http: aiohttp.ClientSession, url: URL, pos: _Position, headers: dict[str, str]
) -> Batch:
    async with await _get(http, url, {"offset": pos.offset}, headers) as response:
        events = _events(await response.read())
        up_to_date, closed = _advance(pos, response.headers)
    return Batch(events, pos.offset, up_to_date, closed)


async def _long_poll(
    http: aiohttp.ClientSession, url: URL, pos: _Position, headers: dict[str, str]
) -> AsyncIterator[Batch]:
    params = {"offset": pos.offset, "live": "long-poll"}
    if pos.cursor:
        params["cursor"] = pos.cursor
    async with await _get(http, url, params, headers) as response:
        events = _events(await response.read()) if response.status == 200 else []
        up_to_date, closed = _advance(pos, response.headers)
    if events or closed:
        yield Batch(events, pos.offset, up_to_date, closed)


async def _sse(
    http: aiohttp.ClientSession, url: URL, pos: _Position, headers: dict[str, str]
) -> AsyncIterator[Batch]:
    """One SSE response. Data is applied only with the control event that follows it: a
    connection lost in between loses nothing, the data is read again from the old offset.
    """
    params = {"offset": pos.offset, "live": "sse"}
    if pos.cursor:
        params["cursor"] = pos.cursor
    pending: list[dict[str, Any]] = []
    sse_headers = {**headers, "Accept": "text/event-stream"}
    async with await _get(http, url, params, sse_headers) as response:
        async for event, data in _sse_events(response):
            if event == "data":
                pending.extend(_events(data.encode("utf-8")))
            elif event == "control":
                control = json.loads(data)
                pos.offset = str(control.get("streamNextOffset", pos.offset))
                pos.cursor = control.get("streamCursor", pos.cursor)
                batch = Batch(
                    pending,
                    pos.offset,
                    bool(control.get("upToDate")),
                    bool(control.get("streamClosed")),
                )
                pending = []
                yield batch


async def _sse_events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    """(event, data) pairs of a text/event-stream body (WHATWG rules, comments skipped)."""
    buffer = b""
    event = "message"
    data: list[str] = []
    size = 0
    async for chunk in response.content.iter_any():
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8").removesuffix("\r")
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data, size = "message", [], 0
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
                size += len(value)
        if size + len(buffer) > MAX_EVENT_BYTES:
            raise ValueError("SSE event over the size limit")
