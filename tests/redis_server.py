"""A real ``redis-server`` for a test: its own free port, nothing saved, stopped afterwards."""

from __future__ import annotations

import asyncio
import shutil
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RedisServer:
    port: int
    folder: Path
    process: asyncio.subprocess.Process | None = None
    _drainer: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        assert REDIS is not None
        self.process = await asyncio.create_subprocess_exec(
            REDIS,
            "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(self.folder), "--daemonize", "no", "--loglevel", "notice",
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():  # until it says it is ready
            if b"Ready to accept connections" in line:
                self._drainer = asyncio.ensure_future(self._drain())
                return
        raise RuntimeError("redis-server exited before it was ready")

    async def _drain(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while await self.process.stdout.readline():
            pass

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self.process = None

    async def restart(self) -> None:
        await self.stop()
        await self.start()


@asynccontextmanager
async def redis_server(folder: Path) -> AsyncIterator[RedisServer]:
    server = RedisServer(free_port(), folder)
    try:
        await server.start()
    except RuntimeError:
        # The free port was taken before redis bound it (tests run at once): another one.
        await server.stop()
        server = RedisServer(free_port(), folder)
        await server.start()
    try:
        yield server
    finally:
        await server.stop()
