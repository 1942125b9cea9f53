"""The embedded runtime: entities run in-process with the RFC's semantics."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from contract import Command, CommandRegistry, categorize, composer_input_problems

from ...events import ErrorEvent, MessageDelta, MessageEnd, RuntimeEvent, SessionUpdated
from ..base import Runtime, RuntimeSession, Turn, UpdateListener
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


class EmbeddedSession(RuntimeSession):
    def __init__(
        self, definition: EntityDefinition, entity_id: str, updates: UpdateListener
    ) -> None:
        self.definition = definition
        self.entity_id = entity_id
        self.state: dict[str, object] = {}
        self._updates = updates
        self.commands = SlashCommands(CommandRegistry(definition.slash_commands), self._publish)
        self._task: asyncio.Task[None] | None = None

    def _publish(self, commands: tuple[Command, ...]) -> None:
        self._updates(SessionUpdated(commands=commands, capabilities={"supports_commands": True}))

    async def spawn(self) -> None:
        self._publish(self.commands.list())
        await self._wake(SpawnWake(), None)

    async def _wake(self, wake: Wake, queue: asyncio.Queue[object] | None) -> None:
        async def reply(text: str) -> None:
            if queue is not None and text:
                queue.put_nowait(MessageDelta(text))

        ctx = HandlerContext(self.entity_id, wake, self.commands, self.state, reply)
        await self.definition.handler(ctx)

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        data = turn.message.payload.model_dump(mode="json", exclude_none=True)
        problems = composer_input_problems(data)
        if problems:
            yield ErrorEvent("generic", "invalid composer_input: " + "; ".join(problems))
            return
        wake = InboxWake(message=InboxMessage(message_type=turn.message.type, payload=data))
        queue: asyncio.Queue[object] = asyncio.Queue()
        task = self._task = asyncio.create_task(self._handle(wake, queue))
        try:
            while (item := await queue.get()) is not _DONE:
                yield item  # type: ignore[misc]
        finally:
            if not task.done():  # the turn was left early: the clean-up finishes here
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _handle(self, wake: InboxWake, queue: asyncio.Queue[object]) -> None:
        try:
            await self._wake(wake, queue)
            queue.put_nowait(MessageEnd())
        except asyncio.CancelledError:
            queue.put_nowait(MessageEnd("cancelled"))
        except HandlerError as exc:
            queue.put_nowait(ErrorEvent(exc.category, str(exc)))
        except Exception as exc:  # the entity's bug is the user's generic failure, not a crash
            queue.put_nowait(ErrorEvent(categorize(str(exc)), str(exc) or type(exc).__name__))
        queue.put_nowait(_DONE)

    async def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def close(self) -> None:
        await self.cancel()


class EmbeddedRuntime(Runtime):
    name = "embedded"
    strict_names = True  # it validates as the Electric Agents server does

    def __init__(self, definition: EntityDefinition) -> None:
        self.definition = definition

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        session = EmbeddedSession(self.definition, key.replace("/", "_"), updates)
        await session.spawn()
        return session

    async def static_commands(self) -> tuple[Command, ...]:
        return CommandRegistry(self.definition.slash_commands).list()

    def describe(self) -> str:
        return f"embedded ({self.definition.type})"
