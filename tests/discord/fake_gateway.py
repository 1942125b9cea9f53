"""A fake Discord Gateway for tests: the WebSocket that hikari's GatewayBot opens (v10, JSON,
with the zlib-stream transport compression hikari asks for) on an ephemeral 127.0.0.1 port.

It speaks what a session needs: HELLO, IDENTIFY answered with READY, heartbeats acknowledged,
RESUME answered with the dispatches the client missed and RESUMED, and the dispatches a test
sends. ``drop`` closes the socket with a resumable code, as Discord does before a reconnect.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.http import serve_app

from .fake import APPLICATION, BOT_USER

DISPATCH, HEARTBEAT, IDENTIFY, RESUME, HELLO, HEARTBEAT_ACK = 0, 1, 2, 6, 10, 11
HEARTBEAT_INTERVAL = 41_250  # milliseconds, as Discord announces it
UNKNOWN_ERROR = 4000  # a close code after which a client resumes its session


class Socket:
    """One connection: JSON frames out, deflated as one zlib stream when asked for."""

    def __init__(self, ws: web.WebSocketResponse, compressed: bool) -> None:
        self.ws = ws
        self._deflate = zlib.compressobj() if compressed else None
        self._lock = asyncio.Lock()  # a frame is deflated and sent in the stream's order

    async def send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload)
        async with self._lock:
            if self._deflate is None:
                await self.ws.send_str(data)
            else:
                chunk = self._deflate.compress(data.encode()) + self._deflate.flush(
                    zlib.Z_SYNC_FLUSH
                )
                await self.ws.send_bytes(chunk)


@dataclass
class FakeGateway:
    url: str = ""
    identified: list[dict[str, Any]] = field(default_factory=list)  # IDENTIFY payloads
    resumed: list[dict[str, Any]] = field(default_factory=list)  # RESUME payloads
    heartbeats: int = 0
    compression: list[str | None] = field(default_factory=list)  # each connection's
    _sent: list[dict[str, Any]] = field(default_factory=list)  # every dispatch, for RESUME
    _seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _session: Socket | None = None  # the connection whose session is live
    _live: asyncio.Event = field(default_factory=asyncio.Event)
    _sessions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def connected(self) -> None:
        """Once a session is live (READY or RESUMED sent)."""
        await self._live.wait()

    async def dispatch(self, name: str, data: dict[str, Any]) -> None:
        """Send an event; while no session is live it waits for the client's RESUME."""
        payload = {"op": DISPATCH, "t": name, "s": next(self._seq), "d": data}
        self._sent.append(payload)
        if self._session is not None:
            await self._session.send(payload)

    async def drop(self, code: int = UNKNOWN_ERROR) -> None:
        """Close the live connection as Discord does when the client should resume."""
        session, self._session = self._session, None
        self._live.clear()
        assert session is not None, "no live session to drop"
        await session.ws.close(code=code, message=b"fake gateway: reconnect")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/", self._connect)
        return app

    async def _connect(self, request: web.Request) -> web.WebSocketResponse:
        assert request.query.get("v") == "10" and request.query.get("encoding") == "json"
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.compression.append(request.query.get("compress"))
        socket = Socket(ws, request.query.get("compress") == "zlib-stream")
        await socket.send({"op": HELLO, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL}})
        async for frame in ws:
            if frame.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                break
            payload = json.loads(frame.data)
            if payload["op"] == HEARTBEAT:
                self.heartbeats += 1
                await socket.send({"op": HEARTBEAT_ACK})
            elif payload["op"] == IDENTIFY:
                self.identified.append(payload["d"])
                await self._ready(socket)
            elif payload["op"] == RESUME:
                self.resumed.append(payload["d"])
                await self._resume(socket, int(payload["d"]["seq"]))
        if self._session is socket:
            self._session = None
            self._live.clear()
        return ws

    async def _ready(self, socket: Socket) -> None:
        ready = {
            "v": 10,
            "user": {**BOT_USER, "mfa_enabled": False, "flags": 0, "verified": True},
            "guilds": [],
            "session_id": f"session-{next(self._sessions)}",
            "resume_gateway_url": self.url,
            "application": {"id": str(APPLICATION), "flags": 0},
        }
        await self._go_live(
            socket, {"op": DISPATCH, "t": "READY", "s": next(self._seq), "d": ready}
        )

    async def _resume(self, socket: Socket, seq: int) -> None:
        for payload in self._sent:
            if payload["s"] > seq:
                await socket.send(payload)
        resumed = {"op": DISPATCH, "t": "RESUMED", "s": next(self._seq), "d": None}
        await self._go_live(socket, resumed)

    async def _go_live(self, socket: Socket, payload: dict[str, Any]) -> None:
        await socket.send(payload)
        self._session = socket
        self._live.set()


@asynccontextmanager
async def fake_gateway() -> AsyncIterator[FakeGateway]:
    fake = FakeGateway()
    async with serve_app(fake.app()) as url:
        fake.url = url.replace("http://", "ws://", 1)
        yield fake
