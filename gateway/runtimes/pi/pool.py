"""A bounded pool of ``pi --mode rpc`` processes, one per active conversation: an idle one is
retired to make room, and one idle for ``idle_ttl`` is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import SecretStr

from ..workspace import AgentPlace
from .process import PiProcess

log = logging.getLogger("slashgate.pi")


class PiUnavailable(Exception):
    """No pi process for this conversation: every one the pool allows is running a turn."""


class Holder(Protocol):
    """A conversation that holds a process of the pool (a ``PiSession``)."""

    key: str
    process: PiProcess | None

    @property
    def busy(self) -> bool: ...

    async def attach(self, process: PiProcess) -> None: ...


class PiPool:
    def __init__(
        self,
        command: Sequence[str],
        place: AgentPlace,
        env: Mapping[str, SecretStr],
        pool_size: int,
        idle_ttl: float,
    ) -> None:
        self.command = command
        self.place = place  # where, and as whom, pi runs
        self.cwd = place.cwd
        self._env = env
        self.pool_size = pool_size
        self.idle_ttl = idle_ttl
        self._live: OrderedDict[str, Holder] = OrderedDict()  # holders of a process, LRU first
        self._starting = 0
        self._lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None

    @property
    def processes(self) -> int:
        """Live pi processes (at most ``pool_size``)."""
        return sum(1 for s in self._live.values() if s.process is not None and s.process.alive)

    def process_of(self, key: str) -> PiProcess | None:
        """The live process of a conversation, if it has one."""
        session = self._live.get(key)
        return session.process if session is not None else None

    def start(self) -> None:
        self.place.prepare()
        self._reaper = asyncio.ensure_future(self._reap())

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        async with self._lock:
            processes = [self._detach(s) for s in list(self._live.values())]
        await _close(*processes)

    async def acquire(self, session: Holder) -> PiProcess:
        """The session's process, started if needed; an idle one is retired to make room."""
        async with self._lock:
            process = session.process
            if process is not None and process.alive:
                self._live.move_to_end(session.key)
                return process
            gone = [self._detach(session)]  # no process, or one that exited
            if len(self._live) + self._starting >= self.pool_size:
                victim = next((s for s in self._live.values() if not s.busy), None)
                if victim is None:
                    raise PiUnavailable(f"all {self.pool_size} pi processes are busy")
                gone.append(self._detach(victim))
            self._starting += 1
        try:
            await _close(*gone)
            process = PiProcess(self.command, self.place, self._env)
            await process.start()
            try:
                await session.attach(process)
            except BaseException:
                session.process = None
                await process.close()
                raise
            log.info("pi started for %s (pid %s)", session.key, process.pid)
        finally:
            async with self._lock:
                self._starting -= 1
        async with self._lock:
            self._live[session.key] = session
        return process

    async def release(self, session: Holder) -> None:
        async with self._lock:
            process = self._detach(session)
        await _close(process)

    def _detach(self, session: Holder) -> PiProcess | None:
        """Under the lock: the session leaves the pool and its process, which the caller closes
        after the lock. A message for it then starts a new process, never finds a closing one,
        and the old one's exit is no news to the new one's turn.
        """
        if self._live.get(session.key) is session:
            del self._live[session.key]
        process, session.process = session.process, None
        if process is not None:
            process.listener = None
        return process

    async def _reap(self) -> None:
        interval = min(max(self.idle_ttl / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            await self.reap_idle()

    async def reap_idle(self, ttl: float | None = None) -> None:
        """Stop the processes idle for ``ttl`` (default ``idle_ttl``); their conversations
        resume in a new one.
        """
        ttl = self.idle_ttl if ttl is None else ttl
        now = time.monotonic()
        async with self._lock:
            idle = [
                s
                for s in self._live.values()
                if not s.busy and (s.process is None or now - s.process.last_used >= ttl)
            ]
            processes = [self._detach(s) for s in idle]
        for session in idle:
            log.info("pi for %s idle for %.0fs: stopping it", session.key, ttl)
        await _close(*processes)


async def _close(*processes: PiProcess | None) -> None:
    await asyncio.gather(*(p.close() for p in processes if p is not None), return_exceptions=True)
