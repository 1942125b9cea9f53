"""One conversation's ACP session: prompts, cancel, permissions, modes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    AvailableCommandsUpdate,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    DeniedOutcome,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
)
from acp.schema import PermissionOption as AcpPermissionOption

from ...events import (
    ErrorEvent,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
    RuntimeEvent,
    SessionUpdated,
)
from ..base import RuntimeSession, Turn, UpdateListener
from ..kept import KeptSessions
from ..pump import EventQueue, pump
from .agent import AcpAgent
from .mapping import command, config_options, modes, prompt_blocks, turn_events, usage

log = logging.getLogger("slashgate.acp")

AGENT_STOPPED = "the agent process stopped; it is restarted for the next message"


def error_text(exc: BaseException) -> str:
    """A one-line description of a failure for the user (JSON-RPC details included)."""
    if isinstance(exc, ConnectionError):
        return AGENT_STOPPED
    text = str(exc) or type(exc).__name__
    if isinstance(exc, RequestError) and isinstance(exc.data, dict):
        details = exc.data.get("details") or exc.data.get("message")
        if isinstance(details, str) and details and details not in text:
            text = f"{text}: {details}"
    return text


def _failure(exc: BaseException) -> ErrorEvent:
    text = error_text(exc)
    if isinstance(exc, ConnectionError):
        return ErrorEvent("generic", text)
    return ErrorEvent.from_text(text)


class AcpSession(RuntimeSession):
    def __init__(
        self, agent: AcpAgent, kept: KeptSessions, key: str, updates: UpdateListener
    ) -> None:
        self.agent = agent
        self.kept = kept  # conversation -> its ACP session id
        self.key = key
        self.session_id: str | None = None
        self._updates = updates
        self._generation = -1
        self._conn: ClientSideConnection | None = None
        self._queue: EventQueue | None = None
        self._permissions: dict[str, tuple[asyncio.Future[str | None], frozenset[str]]] = {}
        self._listed = False  # a non-empty command list came (after it, empty withdraws all)
        self._after_cancel = False  # the last prompt was cancelled (the agent got session/cancel)
        self._heard = False  # the turn in flight got something from the agent besides its end
        self._stirred = 0.0  # when the last update of this session came (monotonic)
        self._reopening = False  # the session is opened again mid-turn: its history is no reply

    # -- the ACP session ------------------------------------------------------------------

    async def connect(self, load: bool = True) -> ClientSideConnection:
        """The live connection, with this conversation's ACP session on it (after a restart,
        the one it had where the agent can load it, else a new one; ``load`` False: new).
        """
        conn, generation = await self.agent.connection()
        if generation == self._generation and self.session_id is not None:
            return conn
        response: LoadSessionResponse | NewSessionResponse | None
        response = await self._load(conn, generation) if load else None
        if response is None:
            created = await self.agent.new_session(conn)
            self.session_id, self._generation, self._conn = created.session_id, generation, conn
            self._after_cancel = False  # a new session owes nothing to the old one's cancel
            self.agent.register(self)  # replays the updates that came before the reply
            await self.kept.set(self.key, self.session_id)
            response = created
        if response.modes is not None:
            self._updates(modes(response.modes))
        if (options := config_options(response.config_options)) is not None:
            self._updates(options)
        return conn

    async def _load(
        self, conn: ClientSideConnection, generation: int
    ) -> LoadSessionResponse | None:
        """``session/load`` of the session this conversation had, where the agent offers it;
        None when there is none to load (or the agent no longer knows it).
        """
        saved = await self.kept.get(self.key)
        if saved is None or not self.agent.loads_sessions:
            return None
        # Known before the call: the agent replays the session's history as updates meanwhile.
        self.session_id, self._generation, self._conn = saved, generation, conn
        self.agent.register(self)
        try:
            return await self.agent.load_session(conn, saved)
        except RequestError as exc:
            log.info("ACP session of %s not loaded (%s): a new one", self.key, error_text(exc))
            self.agent.unregister(self)
            self.session_id = None
            return None

    def on_update(self, update: Any) -> None:
        """One ``session/update``. Synchronous on purpose: the SDK runs each notification as its
        own task, so queueing before any await is what keeps the agent's order.
        """
        self._stirred = time.monotonic()
        if isinstance(update, AvailableCommandsUpdate):
            commands = tuple(command(c) for c in update.available_commands)
            if not commands and not self._listed:
                return  # an empty first list is no answer yet: the gateway waits for the real one
            self._listed = True
            self._updates(
                SessionUpdated(commands=commands, capabilities={"supports_commands": True})
            )
        elif isinstance(update, CurrentModeUpdate):
            self._updates(SessionUpdated(current_mode=update.current_mode_id))
        elif isinstance(update, ConfigOptionUpdate):
            if (options := config_options(update.config_options)) is not None:
                self._updates(options)
        elif self._queue is not None and not self._reopening:
            for event in turn_events(update):
                self._heard = True
                self._queue.put_nowait(event)

    # -- turns ----------------------------------------------------------------------------

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        try:
            conn = await self.connect()
        except Exception as exc:
            log.warning("no ACP session for %s: %s", self.key, error_text(exc))
            yield _failure(exc)
            return
        assert self.session_id is not None
        session_id = self.session_id
        queue: EventQueue = asyncio.Queue()
        self._queue, self._heard = queue, False
        blocks = prompt_blocks(turn, self.agent.cwd, self.agent.prompt_capabilities)
        events = pump(
            queue,
            partial(self._prompt, conn, session_id, blocks, queue),
            partial(self._stop, conn, session_id),
        )
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
        finally:
            if self._queue is queue:
                self._queue = None
            self._deny_pending()

    async def _prompt(
        self, conn: ClientSideConnection, session_id: str, blocks: list[Any], queue: EventQueue
    ) -> None:
        try:
            response = await conn.prompt(session_id=session_id, prompt=blocks)
            if self._after_cancel and response.stop_reason == "end_turn" and not self._heard:
                response = await self._once_more(conn, session_id, blocks)
            self._after_cancel = response.stop_reason == "cancelled"
            if response.usage is not None:
                queue.put_nowait(usage(response.usage))
            queue.put_nowait(MessageEnd(response.stop_reason))
        except Exception as exc:
            log.warning("prompt failed in %s: %s", self.key, error_text(exc))
            queue.put_nowait(_failure(exc))

    async def _once_more(
        self, conn: ClientSideConnection, session_id: str, blocks: list[Any]
    ) -> PromptResponse:
        """claude-agent-acp answers the first prompt after a cancelled one with an empty turn:
        the user did nothing wrong, so it goes once more. In the same session it would bring
        the late answer to the first try too (claude-agent-acp streams both), or at times no
        answer at all: where the agent can close and load sessions, the session is opened
        again first (``_reopen``, history kept). Elsewhere the prompt goes once more in the
        same session, and once that has been silent for the cancel grace, it is cancelled and
        the session opened again. Only an empty answer from the last try reaches the user (the
        core words it).
        """
        self._after_cancel = False
        if self.agent.reopens_sessions:
            log.warning(
                "the agent answered the first prompt after a cancel in %s with nothing: "
                "its session is opened again for it",
                self.key,
            )
            return await self._prompt_reopened(conn, session_id, blocks)
        log.warning(
            "the agent answered the first prompt after a cancel in %s with nothing: "
            "sending it once more",
            self.key,
        )
        retry = asyncio.ensure_future(conn.prompt(session_id=session_id, prompt=blocks))
        try:
            if await self._answers(retry):
                return retry.result()
        finally:
            retry.cancel()
        log.warning(
            "the agent did not answer the prompt sent once more in %s for %.0f s: "
            "its session is opened again",
            self.key,
            self.agent.cancel_grace,
        )
        await self._send_cancel(conn, session_id)
        return await self._prompt_reopened(conn, session_id, blocks)

    async def _prompt_reopened(
        self, conn: ClientSideConnection, session_id: str, blocks: list[Any]
    ) -> PromptResponse:
        conn = await self._reopen(conn, session_id)
        assert self.session_id is not None
        return await conn.prompt(session_id=self.session_id, prompt=blocks)

    async def _answers(self, prompt: asyncio.Future[PromptResponse]) -> bool:
        """Whether ``prompt`` ends before the agent has been silent for the cancel grace."""
        self._stirred = time.monotonic()
        while True:
            silent = self._stirred + self.agent.cancel_grace - time.monotonic()
            if silent <= 0:
                return False
            done, _ = await asyncio.wait({prompt}, timeout=silent)
            if done:
                return True

    async def _reopen(self, conn: ClientSideConnection, session_id: str) -> ClientSideConnection:
        """This conversation's ACP session opened again, without a word to the user: closed and
        loaded where the agent offers both (the conversation keeps its history), else a new
        one (loading a session still open may hand back the stuck one). What the agent replays
        of the history meanwhile is not part of the turn.
        """
        self.agent.unregister(self)
        load = self.agent.reopens_sessions and await self.agent.close_session(conn, session_id)
        self._generation, self._reopening = -1, True
        try:
            return await self.connect(load)
        finally:
            self._reopening = False

    async def _stop(self, conn: ClientSideConnection, session_id: str) -> None:
        """The turn outlived its reader: answer its permission requests, then cancel it."""
        self._after_cancel = True
        self._deny_pending()
        await self._send_cancel(conn, session_id)

    async def cancel(self) -> None:
        self._deny_pending()  # the protocol wants pending permission requests answered cancelled
        if self._queue is None or self._conn is None or self.session_id is None:
            return
        await self._send_cancel(self._conn, self.session_id)

    async def _send_cancel(self, conn: ClientSideConnection, session_id: str) -> None:
        """``session/cancel`` is a notification, but its write waits for an agent that no
        longer reads its stdin: bounded by the grace.
        """
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.cancel(session_id=session_id), self.agent.cancel_grace)

    # -- permissions ----------------------------------------------------------------------

    async def permission(
        self, tool_call: ToolCallUpdate, options: list[AcpPermissionOption]
    ) -> RequestPermissionResponse:
        """Ask the user through the turn's event stream; no turn running means cancelled."""
        queue = self._queue
        if queue is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        request_id = uuid.uuid4().hex[:16]
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._permissions[request_id] = (future, frozenset(o.option_id for o in options))
        self._heard = True
        queue.put_nowait(
            PermissionRequired(
                request_id,
                tool_call.title or "The agent asks for permission",
                tuple(PermissionOption(o.option_id, o.name, o.kind) for o in options),
            )
        )
        try:
            choice = await future
        finally:
            self._permissions.pop(request_id, None)
        if choice is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        entry = self._permissions.get(request_id)
        if entry is None or entry[0].done():
            return False
        future, offered = entry
        if option_id is not None and option_id not in offered:
            return False
        future.set_result(option_id)
        return True

    def _deny_pending(self) -> None:
        for future, _ in self._permissions.values():
            if not future.done():
                future.set_result(None)

    # -- modes and lifecycle --------------------------------------------------------------

    async def set_mode(self, mode_id: str) -> None:
        conn = await self.connect()
        assert self.session_id is not None
        await conn.set_session_mode(session_id=self.session_id, mode_id=mode_id)
        self._updates(SessionUpdated(current_mode=mode_id))

    async def close(self) -> None:
        await self.cancel()
        self.agent.unregister(self)

    async def reset(self) -> None:
        await self.close()
        await self.kept.set(self.key, None)  # /new: never load this one again
