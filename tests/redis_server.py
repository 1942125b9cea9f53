"""A real ``redis-server`` for a test: its own free port, stopped afterwards; nothing saved
unless it is ``persistent`` (the append-only file, as the deployment runs it, in its folder).
"""

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
    persistent: bool = False
    process: asyncio.subprocess.Process | None = None
    _drainer: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    async def start(self) -> None:
        assert REDIS is not None
        appendonly = "yes" if self.persistent else "no"
        self.process = await asyncio.create_subprocess_exec(
            REDIS,
            "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", appendonly, "--dir", str(self.folder), "--daemonize", "no",
            "--loglevel", "notice",
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

    async def stop(self, graceful: bool = False) -> None:
        """SIGKILL; ``graceful``: SIGTERM, as an operator's restart (Redis writes out first)."""
        if self.process is not None and self.process.returncode is None:
            if graceful:
                self.process.terminate()
            else:
                self.process.kill()
            await self.process.wait()
        if self._drainer is not None:
            await self._drainer
            self._drainer = None
        self.process = None

    async def restart(self, graceful: bool = False) -> None:
        await self.stop(graceful)
        await self.start()


@asynccontextmanager
async def redis_server(folder: Path, persistent: bool = False) -> AsyncIterator[RedisServer]:
    server = RedisServer(free_port(), folder, persistent)
    try:
        await server.start()
    except RuntimeError:
        # The free port was taken before redis bound it (tests run at once): another one.
        await server.stop()
        server = RedisServer(free_port(), folder, persistent)
        await server.start()
    try:
        yield server
    finally:
        await server.stop()
