"""One ``pi --mode rpc`` child: JSON lines split on LF only, requests matched to responses by id."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import SecretStr

from ...tasks import BackgroundTasks
from ..stdio import StderrPipe, end_group, revealed, spawn
from ..workspace import AgentPlace

log = logging.getLogger("slashgate.pi")

LINE_LIMIT = 64 * 1024 * 1024  # agent_end carries every message of the run: lines get long
SHUTDOWN_GRACE = 2.0

Event = dict[str, Any]
EventListener = Callable[[Event], None]


class PiStopped(ConnectionError):
    """The pi process is gone (it exited, or was closed)."""


def child_environment(extra: Mapping[str, SecretStr], place: AgentPlace) -> dict[str, str]:
    """pi runs as its user would run it, minus the gateway's own settings (tokens, secrets),
    with its user's HOME when that is another.
    """
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SLASHGATE_")}
    env.update(place.environment())
    env.update(revealed(extra))
    return env


class PiProcess:
    def __init__(
        self, command: Sequence[str], place: AgentPlace, env: Mapping[str, SecretStr]
    ) -> None:
        self._command = list(command)
        self._place = place
        self._env = child_environment(env, place)
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[Event]] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._tasks = BackgroundTasks()  # the stdout reader and the stderr drain
        self.stopped = asyncio.Event()
        self.listener: EventListener | None = None
        self.last_used = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def alive(self) -> bool:
        return self._process is not None and not self.stopped.is_set()

    async def start(self) -> None:
        stderr = StderrPipe()
        try:
            self._process = await spawn(
                *self._command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr.child_fd,
                env=self._env,
                limit=LINE_LIMIT,
                **self._place.spawn_options(),
            )
        except BaseException:
            stderr.close()
            raise
        stderr.started()
        self._tasks.spawn(stderr.drain(log, f"pi {self._process.pid}"))
        self._tasks.spawn(self._read())

    # -- output ---------------------------------------------------------------------------

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        try:
            while line := await _read_record(stdout):
                self._dispatch(line)
        finally:
            self.stopped.set()
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(PiStopped("pi stopped"))
            self._pending.clear()
            if self.listener is not None:
                self.listener({"type": "process_exit"})

    def _dispatch(self, line: bytes) -> None:
        try:
            message = json.loads(line.decode("utf-8"))
        except ValueError:
            log.warning("pi %s wrote a line that is not JSON (%d bytes)", self.pid, len(line))
            return
        if not isinstance(message, dict):
            return
        if message.get("type") == "response":
            future = self._pending.pop(str(message.get("id")), None)
            if future is not None and not future.done():
                future.set_result(message)
                return
        if self.listener is not None:
            self.listener(message)

    # -- input ----------------------------------------------------------------------------

    def send(self, message: Event) -> None:
        """Write one record (no response expected)."""
        if not self.alive or self._process is None or self._process.stdin is None:
            raise PiStopped("pi stopped")
        self._process.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")

    async def request(self, message: Event, within: float | None = None) -> Event:
        """Send a command and wait for its ``response`` (``success`` is the caller's to check)."""
        request_id = f"sg-{next(self._ids)}"
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            self.send({**message, "id": request_id})
            assert self._process is not None and self._process.stdin is not None
            await self._process.stdin.drain()
            return await asyncio.wait_for(future, within)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise PiStopped("pi stopped") from exc
        finally:
            self._pending.pop(request_id, None)
            self.last_used = time.monotonic()

    async def close(self) -> None:
        """EOF on stdin, then end pi's process group (its tools' processes included)."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
        await end_group(process)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.stopped.wait(), SHUTDOWN_GRACE)
        await self._tasks.aclose()


async def _read_record(stream: asyncio.StreamReader) -> bytes:
    """One JSONL record: up to LF only (U+2028 and U+2029 are data), a trailing CR dropped.
    Empty bytes at EOF.
    """
    while True:
        chunks: list[bytes] = []
        while True:
            try:
                chunks.append(await stream.readuntil(b"\n"))
                break
            except asyncio.LimitOverrunError as exc:
                chunks.append(await stream.readexactly(exc.consumed))
            except asyncio.IncompleteReadError as exc:
                chunks.append(exc.partial)
                break
        line = b"".join(chunks)
        if not line:
            return b""
        record = line.rstrip(b"\n").removesuffix(b"\r")
        if record.strip():
            return record
