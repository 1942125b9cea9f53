"""The ACP agent: one process at a time (started again when it dies), initialized, watched; its
callbacks reach the session they name.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Protocol, cast

from acp import PROTOCOL_VERSION, Client, RequestError
from acp.client.connection import ClientSideConnection
from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
from acp.schema import (
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.transports import default_environment
from pydantic import SecretStr

from ...store import BoundedTTLMap
from ...tasks import BackgroundTasks
from ..stdio import StderrPipe, end_group, exited, revealed, spawn
from ..workspace import AgentPlace
from .lenient import LENIENT, UpdateTransport, read_update

log = logging.getLogger("slashgate.acp")

AUTH_REQUIRED = -32000  # JSON-RPC error code of ``session/new`` when the agent wants authenticate
INITIALIZE_TIMEOUT = 60.0
EARLY_SESSIONS = 256  # session ids whose updates may wait for their session/new reply
EARLY_UPDATES = 64  # updates kept per such session id
EARLY_TTL = 120.0


class Listener(Protocol):
    """What the agent's callbacks reach: a conversation's ACP session (``AcpSession``)."""

    session_id: str | None

    def on_update(self, update: Any) -> None: ...

    async def permission(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse: ...


class _Client:
    """The client side the agent calls back. One per agent process (``generation``)."""

    def __init__(self, agent: AcpAgent, generation: int, pid: int) -> None:
        self._agent = agent
        self._generation = generation
        self._pid = pid
        self._faulted = False  # a notification out of shape was logged (once per process)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Each ``session/update`` (``UpdateTransport`` hands them over under ``LENIENT``), read
        leniently. No await before routing: the SDK runs every notification as its own task.
        """
        if method != LENIENT:
            return
        read = read_update(params)
        if read.faults and not self._faulted:
            self._faulted = True
            log.warning(
                "ACP agent %s sent a session/update out of the protocol's shape (%s): %s; "
                "further ones from this process are read the same way without a word",
                self._pid,
                "; ".join(read.faults),
                "read without those fields" if read.update is not None else "dropped",
            )
        if read.session_id is not None and read.update is not None:
            self._agent.route(self._generation, read.session_id, read.update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        session = self._agent.session(self._generation, session_id)
        if session is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return await session.permission(tool_call, options)


@dataclass
class _Process:
    """One started and initialized process of the agent."""

    generation: int
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    init: InitializeResponse

    @property
    def alive(self) -> bool:
        # Its stdout at EOF is the first sign of a dead agent: the exit status comes later.
        stdout = self.process.stdout
        return self.process.returncode is None and not (stdout is not None and stdout.at_eof())


class AcpAgent:
    """The agent over its successive processes, and the sessions its callbacks name."""

    def __init__(
        self,
        command: Sequence[str],
        place: AgentPlace,
        env: Mapping[str, SecretStr],
        auth_method: str | None,
        cancel_grace: float,
    ) -> None:
        self.command = command
        self.place = place  # where, and as whom, it runs
        self.cwd = place.cwd
        # The SDK passes only a trimmed environment (PATH, HOME, ...) plus this.
        self._env = env
        self._auth_method = auth_method
        self.cancel_grace = cancel_grace  # how long the agent has to honour session/cancel
        self._lock = asyncio.Lock()
        self._live: _Process | None = None
        self._starting: asyncio.subprocess.Process | None = None  # spawned, not initialized
        self._generation = 0
        self._sessions: dict[str, Listener] = {}
        self._early: BoundedTTLMap[list[Any]] = BoundedTTLMap(EARLY_SESSIONS, EARLY_TTL)
        self._tasks = BackgroundTasks()  # stderr drains and exit watchers

    @property
    def alive(self) -> bool:
        return self._live is not None and self._live.alive

    @property
    def info(self) -> Implementation | None:
        """The name and version the agent gave, once started."""
        return self._live.init.agent_info if self._live else None

    @property
    def prompt_capabilities(self) -> PromptCapabilities | None:
        caps = self._live.init.agent_capabilities if self._live else None
        return caps.prompt_capabilities if caps else None

    # -- the process ----------------------------------------------------------------------

    async def stop(self) -> None:
        # An agent still starting holds the lock for up to INITIALIZE_TIMEOUT: ended here, its
        # initialize fails at once, and the lock comes free.
        if self._starting is not None:
            await end_group(self._starting)
        async with self._lock:
            live, self._live = self._live, None
            if live is not None:
                await self._close(live)
        await self._tasks.aclose()

    async def connection(self) -> tuple[ClientSideConnection, int]:
        """The live connection and its generation; (re)starts the agent when there is none."""
        async with self._lock:
            live = self._live
            if live is None or not live.alive:
                if live is not None:
                    await self._close(live)
                live = self._live = await self._spawn()
            return live.conn, live.generation

    async def _spawn(self) -> _Process:
        self._generation += 1
        generation = self._generation
        self._sessions.clear()  # session ids of an earlier process mean nothing to this one
        stderr = StderrPipe()
        try:
            process = await spawn(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr.child_fd,
                # The SDK's trimmed environment (PATH, HOME, ...; no SLASHGATE_* variable)
                # with its user's HOME when that is another, plus the configured one.
                env={**default_environment(), **self.place.environment(), **revealed(self._env)},
                limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES,
                **self.place.spawn_options(),
            )
        except BaseException:
            stderr.close()
            raise
        stderr.started()
        assert process.stdin is not None and process.stdout is not None
        conn = ClientSideConnection(
            cast(Client, _Client(self, generation, process.pid)),
            UpdateTransport(process.stdout, process.stdin),
        )
        self._tasks.spawn(stderr.drain(log, f"acp agent {process.pid}"))
        self._starting = process
        try:
            init = await asyncio.wait_for(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=ClientCapabilities(),
                    client_info=Implementation(name="slashgate", version=version("slashgate")),
                ),
                INITIALIZE_TIMEOUT,
            )
        except BaseException as exc:
            await _end(conn, process)
            await stderr.explain(exc)
            raise
        finally:
            self._starting = None
        live = _Process(generation, conn, process, init)
        self._tasks.spawn(self._watch(live))
        info = init.agent_info
        log.info(
            "ACP agent started (pid %s%s)",
            process.pid,
            f", {info.name} {info.version}" if info else "",
        )
        return live

    async def _watch(self, live: _Process) -> None:
        await exited(live.process)
        async with self._lock:
            if self._live is not live:
                return
            self._live = None
            log.warning("ACP agent exited; it restarts on the next message")
            await self._close(live)  # what it left running goes too; its turns fail now

    async def _close(self, live: _Process) -> None:
        await _end(live.conn, live.process)

    # -- sessions -------------------------------------------------------------------------

    async def new_session(self, conn: ClientSideConnection) -> NewSessionResponse:
        """``session/new``, authenticating first when the agent answers auth-required."""
        try:
            return await conn.new_session(cwd=str(self.cwd), mcp_servers=[])
        except RequestError as exc:
            if exc.code != AUTH_REQUIRED:
                raise
        methods = [m.id for m in (self._live.init.auth_methods if self._live else None) or ()]
        if self._auth_method is None:
            raise RuntimeError(
                f"the agent requires authentication: set acp_auth_method to one of {methods}"
            )
        await conn.authenticate(method_id=self._auth_method)
        return await conn.new_session(cwd=str(self.cwd), mcp_servers=[])

    @property
    def loads_sessions(self) -> bool:
        """The agent offers ``session/load``: a conversation goes on in its old session."""
        caps = self._live.init.agent_capabilities if self._live else None
        return bool(caps and caps.load_session)

    async def load_session(
        self, conn: ClientSideConnection, session_id: str
    ) -> LoadSessionResponse:
        return await conn.load_session(cwd=str(self.cwd), session_id=session_id, mcp_servers=[])

    @property
    def reopens_sessions(self) -> bool:
        """The agent offers ``session/close`` and ``session/load``: a session can be opened
        again afresh with its history.
        """
        caps = self._live.init.agent_capabilities if self._live else None
        sessions = caps.session_capabilities if caps else None
        return self.loads_sessions and sessions is not None and sessions.close is not None

    async def close_session(self, conn: ClientSideConnection, session_id: str) -> bool:
        """``session/close``, bounded by the cancel grace; False when it failed or took longer."""
        try:
            await asyncio.wait_for(conn.close_session(session_id=session_id), self.cancel_grace)
        except (Exception, TimeoutError) as exc:
            log.info("ACP session %s not closed: %s", session_id, exc or type(exc).__name__)
            return False
        return True

    def register(self, session: Listener) -> None:
        assert session.session_id is not None
        self._sessions[session.session_id] = session
        for update in self._early.pop(session.session_id) or ():
            session.on_update(update)

    def unregister(self, session: Listener) -> None:
        if session.session_id is not None and self._sessions.get(session.session_id) is session:
            del self._sessions[session.session_id]

    def session(self, generation: int, session_id: str) -> Listener | None:
        return self._sessions.get(session_id) if generation == self._generation else None

    def route(self, generation: int, session_id: str, update: Any) -> None:
        """Hand an update to its session, or keep it until the session/new reply names it."""
        if generation != self._generation:
            return
        session = self._sessions.get(session_id)
        if session is not None:
            session.on_update(update)
            return
        early = self._early.get(session_id)
        if early is None:
            early = []
            self._early.set(session_id, early)
        if len(early) < EARLY_UPDATES:
            early.append(update)


async def _end(conn: ClientSideConnection, process: asyncio.subprocess.Process) -> None:
    """End the agent's process group first: closing the connection waits for its writes, which
    an agent that no longer reads its stdin would hold up for ever.
    """
    await end_group(process)
    with contextlib.suppress(Exception):
        await conn.close()
