"""The pi runtime: a bounded pool of ``pi --mode rpc`` processes, one per active conversation."""

from __future__ import annotations

import logging

from ...state import StateStore
from ..base import Runtime, RuntimeSession, UpdateListener
from ..kept import KeptSessions
from ..stdio import missing_program, program
from .pool import PiPool
from .process import PiProcess
from .session import PiSession
from .settings import PiSettings

log = logging.getLogger("slashgate.pi")


class PiRuntime(Runtime):
    name = "pi"

    def __init__(self, settings: PiSettings) -> None:
        if not settings.pi_command:
            raise ValueError('pi_command is empty: set it, e.g. ["pi", "--mode", "rpc"]')
        command, env = program(settings.pi_command), dict(settings.pi_env)
        place = settings.agent_place("pi")
        self.pool = PiPool(command, place, env, settings.pi_pool_size, settings.pi_idle_ttl)
        self.cancel_grace = settings.cancel_grace  # how long pi has to answer an abort
        self.kept = KeptSessions("pi")  # conversation -> its pi session file

    def use_store(self, store: StateStore) -> None:
        self.kept.store = store

    @property
    def processes(self) -> int:
        """Live pi processes (at most ``pool_size``)."""
        return self.pool.processes

    def process_of(self, key: str) -> PiProcess | None:
        """The live process of a conversation, if it has one."""
        return self.pool.process_of(key)

    async def reap_idle(self, ttl: float | None = None) -> None:
        """Stop the processes idle for ``ttl`` (default ``idle_ttl``)."""
        await self.pool.reap_idle(ttl)

    async def start(self) -> None:
        self.pool.start()

    async def stop(self) -> None:
        await self.pool.stop()

    async def readiness(self) -> str | None:
        return missing_program(self.pool.command)

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        session = PiSession(self.pool, self.kept, key, updates, self.cancel_grace)
        session.session_file = await self.kept.get(key)  # resumed by its first process
        try:
            await self.pool.acquire(session)  # early, so that its commands are known before input
        except Exception as exc:
            log.warning("no pi process for %s yet: %s", key, exc)  # the first turn retries
        return session

    def describe(self) -> str:
        return f"pi ({' '.join(self.pool.command)})"
