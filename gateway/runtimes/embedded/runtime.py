"""The embedded runtime: entities run in-process with the RFC's semantics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import types
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Coroutine, Generator
from typing import Any

from contract import Command, CommandRegistry, categorize, composer_input_problems

from ...attachments import with_parts
from ...composer import payload_json
from ...events import (
    Answered,
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    RuntimeEvent,
    SessionUpdated,
)
from ...offload import THRESHOLD, off_loop
from ...state import StateStore, StoreUnavailable
from ..base import AgentInfo, Runtime, RuntimeSession, Turn, UpdateListener
from .entity import (
    EntityDefinition,
    HandlerContext,
    HandlerError,
    InboxMessage,
    InboxWake,
    SlashCommands,
    SpawnWake,
    Wake,
)

_DONE = object()
log = logging.getLogger("slashgate.embedded")


class _Events:
    """The turn's events, from the handler's task to the stream: a list and one waiter
    (an ``asyncio.Queue`` makes three deques and an Event per turn).
    """

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: list[object] = []
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: object) -> None:
        self._items.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def drain(self) -> list[object]:
        items, self._items = self._items, []
        return items

    async def get(self) -> object:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.pop(0)


@types.coroutine
def _resume(coroutine: Coroutine[Any, Any, None], pending: Any) -> Generator[Any, None, None]:
    """Go on with a coroutine that suspended outside a task, awaiting ``pending`` (what it
    yielded): as its task would, wait for that, then send it on, or throw in what was thrown
    here (a cancel), until it returns.
    """
    while True:
        error: BaseException | None = None
        try:
            yield pending
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:  # a cancel: the coroutine gets it where it waits
            error = exc
        try:
            pending = coroutine.send(None) if error is None else coroutine.throw(error)
        except StopIteration:
            return


def _encodable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _checked(turn: Turn) -> dict[str, Any] | Answered:
    """The payload the handler gets (the composer_input JSON, with the files' parts), or
    the turn's answer when the Electric Agents server would refuse it.
    """
    data = payload_json(turn.message.payload)
    if turn.attachments:  # most inputs have none: ``with_parts`` would hand ``data`` back
        data = with_parts(data, turn.attachments)
    problems = () if turn.checked else composer_input_problems(data)
    if problems:
        error = "invalid composer_input: " + "; ".join(problems)
        return Answered([ErrorEvent("generic", error)])
    return data


class EmbeddedSession(RuntimeSession):
    """One conversation's entity. With a store, what it keeps outlives the process: its
    dynamic commands and the JSON-encodable part of its state, saved after each turn that
    changed them and read back when the conversation opens again (after a restart, or once
    evicted). ``static``: the runtime's registry of the definition's commands, shared.
    """

    __slots__ = (
        "_saved",
        "_stopped",
        "_store",
        "_task",
        "_updates",
        "commands",
        "definition",
        "entity_id",
        "key",
        "state",
    )

    def __init__(
        self,
        definition: EntityDefinition,
        key: str,
        updates: UpdateListener,
        store: StateStore | None = None,
        static: CommandRegistry | None = None,
    ) -> None:
        self.definition = definition
        self.key = key
        self.entity_id = key.replace("/", "_")
        self.state: dict[str, object] = {}
        self._updates = updates
        if static is None:
            self.commands = SlashCommands(CommandRegistry(definition.slash_commands), self._publish)
        else:
            self.commands = SlashCommands(static, self._publish, shared=True)
        self._task: asyncio.Task[None] | None = None
        self._store = store
        self._saved: str | None = None  # what the store holds, encoded
        self._stopped = False  # cancelled while a big input was checked in a thread

    @property
    def _state_key(self) -> str:
        return f"embedded:{self.definition.type}:{self.key}"

    def _kept(self) -> tuple[dict[str, Any], str]:
        """What the store keeps of this conversation, and its encoding (compared with what
        was saved, so that a turn that changed nothing writes nothing).
        """
        dynamic = [c.model_dump(exclude_none=True) for c in self.commands.dynamic()]
        try:
            kept = {"state": self.state, "commands": dynamic}
            return kept, json.dumps(kept, sort_keys=True)
        except (TypeError, ValueError):  # what cannot be encoded is not kept
            state = {k: v for k, v in self.state.items() if _encodable(v)}
            kept = {"state": state, "commands": dynamic}
            return kept, json.dumps(kept, sort_keys=True)

    async def _restore(self) -> None:
        if self._store is None:
            return
        saved = await self._store.get(self._state_key)
        if not isinstance(saved, dict):
            return
        self.state.update(saved.get("state") or {})
        for command in saved.get("commands") or ():
            self.commands.register(Command.model_validate(command))
        self._saved = self._kept()[1]

    def _keeps(self) -> bool:
        """False when a turn has nothing to save: no store, or nothing to keep and nothing
        kept (most conversations of a bot that keeps no state).
        """
        if self._store is None:
            return False
        return self._saved is not None or bool(self.state) or bool(self.commands.dynamic())

    async def _save(self) -> None:
        """What the conversation keeps, to the store when it changed (``_keeps`` first)."""
        assert self._store is not None
        kept, encoded = self._kept()
        if encoded != self._saved:
            try:
                await self._store.set(self._state_key, kept)
            except StoreUnavailable as exc:
                log.warning("state of %s not saved: %s", self.key, exc)
                return
            self._saved = encoded

    def _publish(self, commands: tuple[Command, ...]) -> None:
        self._updates(SessionUpdated(commands=commands, capabilities={"supports_commands": True}))

    async def spawn(self) -> None:
        await self._restore()
        self._publish(self.commands.list())
        await self._wake(SpawnWake(), None)

    def _wake(self, wake: Wake, events: _Events | None) -> Awaitable[None]:
        """The handler's run of one wake (its coroutine, awaited by the caller)."""

        async def reply(text: str) -> None:
            if events is not None and text:
                events.put(MessageDelta(text))

        ctx = HandlerContext(self.entity_id, wake, self.commands, self.state, reply, self.key)
        return self.definition.handler(ctx)

    def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        size = len(turn.message.payload.source)
        if size >= THRESHOLD:
            return self._big(turn, size)
        return self._start(turn, _checked(turn))

    async def _big(self, turn: Turn, size: int) -> AsyncIterator[RuntimeEvent]:
        """``run`` of a big input: its copy and check in a thread, then the same turn."""
        self._stopped = False
        data = await off_loop(size, _checked, turn)
        if self._stopped:  # no handler to cancel yet: it does not start
            yield MessageEnd("cancelled")
            return
        stream = self._start(turn, data)
        if isinstance(stream, Answered):
            for event in stream.events:
                yield event
            return
        async with contextlib.aclosing(stream):  # left early: its handler's task ends here
            async for event in stream:
                yield event

    def _start(
        self, turn: Turn, data: dict[str, Any] | Answered
    ) -> Answered | AsyncGenerator[RuntimeEvent, None]:
        """The turn of a checked payload (an ``Answered`` refusal is the turn)."""
        if isinstance(data, Answered):
            return data
        message = InboxMessage(message_type=turn.message.type, payload=data, sender=turn.user)
        events = _Events()
        handling = self._handle(InboxWake(message=message), events)
        # Its first step runs here: most handlers answer without waiting for anything, and
        # then the turn costs no task and no pass of the event loop.
        try:
            pending = handling.send(None)
        except StopIteration:
            return Answered(events.drain()[:-1])  # type: ignore[arg-type]  # without _DONE
        return self._rest(handling, pending, events)

    async def _rest(
        self, handling: Coroutine[Any, Any, None], pending: Any, events: _Events
    ) -> AsyncGenerator[RuntimeEvent, None]:
        """The stream of a handler that waited for something: it goes on in a task."""
        task = self._task = asyncio.ensure_future(_resume(handling, pending))
        try:
            while (item := await events.get()) is not _DONE:
                yield item  # type: ignore[misc]
        finally:
            if not task.done():  # the turn was left early: the clean-up finishes here
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            self._task = None  # an idle session keeps no finished task

    async def _handle(self, wake: InboxWake, events: _Events) -> None:
        end: RuntimeEvent
        try:
            await self._wake(wake, events)
            end = MessageEnd()
        except asyncio.CancelledError:
            end = MessageEnd("cancelled")
        except HandlerError as exc:
            end = ErrorEvent(exc.category, str(exc))
        except Exception as exc:  # the entity's bug is the user's generic failure, not a crash
            end = ErrorEvent(categorize(str(exc)), str(exc) or type(exc).__name__)
        # Saved before the turn ends: the reader stops at the end and cancels what is left.
        if self._keeps():
            await self._save()
        events.put(end)
        events.put(_DONE)

    async def cancel(self) -> None:
        self._stopped = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def close(self) -> None:
        await self.cancel()

    async def reset(self) -> None:
        await self.close()
        if self._store is not None:
            with contextlib.suppress(StoreUnavailable):
                await self._store.delete(self._state_key)


class EmbeddedRuntime(Runtime):
    name = "embedded"
    strict_names = True  # it validates as the Electric Agents server does

    def __init__(self, definition: EntityDefinition) -> None:
        self.definition = definition
        self.store: StateStore | None = None
        self._static: tuple[EntityDefinition, CommandRegistry] | None = None

    def use_store(self, store: StateStore) -> None:
        self.store = store

    def _registry(self) -> CommandRegistry:
        """The definition's commands, marked static once per definition and shared by every
        session until it registers its own; a ``Bot`` that adds a command has a new definition.
        """
        if self._static is None or self._static[0] is not self.definition:
            self._static = (self.definition, CommandRegistry(self.definition.slash_commands))
        return self._static[1]

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        session = EmbeddedSession(self.definition, key, updates, self.store, self._registry())
        await session.spawn()
        return session

    async def static_commands(self) -> tuple[Command, ...]:
        return self._registry().list()

    def agent_info(self) -> AgentInfo:
        return AgentInfo(self.definition.type, self.name, description=self.definition.description)

    def describe(self) -> str:
        return f"embedded ({self.definition.type})"
