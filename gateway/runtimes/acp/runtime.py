"""The ACP runtime: one agent process (restarted when it dies), one ACP session per conversation."""

from __future__ import annotations

import logging
from pathlib import Path

from ...state import StateStore
from ..base import AgentInfo, Runtime, RuntimeSession, UpdateListener
from ..kept import KeptSessions
from ..stdio import missing_program, program
from .agent import AcpAgent
from .session import AcpSession
from .settings import AcpSettings

log = logging.getLogger("slashgate.acp")


class AcpRuntime(Runtime):
    name = "acp"

    def __init__(self, settings: AcpSettings) -> None:
        if not settings.acp_command:
            raise ValueError(
                'acp_command is empty: set the agent command, e.g. ["gemini", "--acp"]'
            )
        self.agent = AcpAgent(
            program(settings.acp_command),
            settings.agent_place("acp"),
            dict(settings.acp_env),
            settings.acp_auth_method,
            settings.cancel_grace,
        )
        self.kept = KeptSessions("acp")  # conversation -> its ACP session id

    def use_store(self, store: StateStore) -> None:
        self.kept.store = store

    async def start(self) -> None:
        self.agent.place.prepare()
        await self.agent.connection()

    async def stop(self) -> None:
        await self.agent.stop()

    async def readiness(self) -> str | None:
        # A dead agent is started again by the next open: only a missing program blocks it.
        return None if self.agent.alive else missing_program(self.agent.command)

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        session = AcpSession(self.agent, self.kept, key, updates)
        try:
            await session.connect()
        except Exception:
            # Not fatal here: the first turn retries and reports the failure to the user.
            log.warning("could not open an ACP session for %s", key, exc_info=True)
        return session

    def agent_info(self) -> AgentInfo:
        info = self.agent.info
        if info is None:  # not started yet: the program's name
            return AgentInfo(Path(self.agent.command[0]).name, self.name)
        return AgentInfo(info.title or info.name, self.name, info.version)

    def describe(self) -> str:
        info = self.agent.info
        return f"acp ({info.name} {info.version})" if info else f"acp ({self.agent.command[0]})"
