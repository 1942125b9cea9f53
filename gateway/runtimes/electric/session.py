"""One conversation = one entity: a stream reader that keeps the inventory current and feeds
the turn in flight, which sends the composer_input and ends when its run completes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeGuard

import aiohttp

from contract import Command

from ...attachments import with_parts
from ...events import ErrorEvent, MessageEnd, RuntimeEvent, SessionUpdated
from ...logs import outside_input
from ..base import RuntimeSession, Turn, UpdateListener
from ..workspace import as_text_outside
from .client import REQUEST_ERRORS
from .failures import BACKOFF_FIRST, BACKOFF_MAX
from .host import EntityHost
from .ids import entity_id, generation_id, user_principal
from .inventory import Inventory
from .stream import START, Batch
from .turn import EntityTurn, http_failure, network_failure
from .wire import ElectricError, Entity

log = logging.getLogger("slashgate.electric")

# The base entity's tag naming the conversation's current generation (the count of /new).
GENERATION_TAG = "slashgate-generation"
REFRESH_WAIT = 3.0  # seconds an input naming an unlisted command waits for the type's list


class ElectricSession(RuntimeSession):
    def __init__(self, runtime: EntityHost, key: str, updates: UpdateListener) -> None:
        self.runtime = runtime
        self.key = key
        self.base_id = entity_id(runtime.prefix, key)
        self.generation: int | None = None  # which entity: known once resolved
        self._updates = updates
        self._entity: Entity | None = None
        self._inventory = Inventory()
        self._offset = START
        self._dirty = False  # the offset applied is newer than the one saved
        self._reader: asyncio.Task[None] | None = None
        self._reported = False  # the inventory went out (once caught up): changes go at once
        self._turn: EntityTurn | None = None
        self._ready = asyncio.Lock()

    @property
    def entity_id(self) -> str:
        return generation_id(self.base_id, self.generation or 0)

    @property
    def state_key(self) -> str:
        return f"electric:stream:{self.runtime.entity_type}/{self.entity_id}"

    # -- the entity and its stream ---------------------------------------------------------

    async def ensure(self) -> None:
        """Create (or find) the entity and start reading its stream; raises on failure."""
        async with self._ready:
            if self._reader is not None:
                return
            type_name = self.runtime.entity_type
            base = await self._resolve()
            if base is not None and self.generation == 0:
                entity = base
            else:
                entity = await self._create(self.entity_id)
            try:
                await self.runtime.declared(fresh=True)  # commands declared since, for all
            except REQUEST_ERRORS as exc:
                log.warning("cannot read the type %s (%s); keeping what is known", type_name, exc)
            saved = await self.runtime.store.get(self.state_key)
            if _matches(saved, self.runtime.client.shown, entity.streams.main):
                self._offset = str(saved["offset"])
                rows = Inventory.restore(saved.get("commands"))
            else:
                self._offset, rows = START, []
            self._entity = entity
            self._inventory = Inventory(self.runtime.static or (), rows)
            # It outlives this input: its lines are the conversation's, not this turn's.
            reading = self._read(entity.streams.main)
            self._reader = asyncio.create_task(reading, context=outside_input())
            self.runtime.sessions.add(self)

    async def _resolve(self) -> Entity | None:
        """Make ``generation`` known: the store keeps it; when it does not (a fresh or a
        lossy store), the base entity's tag tells, so that a lost key never brings back the
        agent a user left with ``/new``. Returns the base entity when it was read for this.
        """
        if self.generation is not None:
            return None
        store, key = self.runtime.store, self.runtime.generation_key(self.key)
        saved = await store.get(key)
        if isinstance(saved, int) and not isinstance(saved, bool) and saved >= 0:
            self.generation = saved
            return None
        base = await self._create(self.base_id)
        self.generation = _tagged_generation(base)
        if self.generation:
            await store.set(key, self.generation)
        return base

    async def _create(self, ident: str) -> Entity:
        type_name = self.runtime.entity_type
        return await self.runtime.client.create_entity(type_name, ident, {})

    async def _read(self, stream_path: str) -> None:
        """Follow the stream for good. The inventory is first reported once caught up (not
        at each step of a long history; after a restart, with what changed meanwhile), then
        at every change. Should reading fail before that, the saved inventory is reported.
        """
        backoff = BACKOFF_FIRST
        self._reported = False
        failures = self.runtime.failures
        try:
            while True:
                try:
                    live = self.runtime.live
                    async for batch in self.runtime.client.read(stream_path, self._offset, live):
                        failures.read(stream_path)
                        changed = await self._apply(batch)
                        if (changed and self._reported) or (
                            batch.up_to_date and not self._reported
                        ):
                            self._report()
                        backoff = BACKOFF_FIRST
                        if batch.closed:
                            self._stream_closed()
                            return
                except ElectricError as exc:
                    if exc.status == 410:  # retention dropped our offset: read what is left
                        log.warning("offset %s of %s is gone; rereading", self._offset, stream_path)
                        self._offset = START
                        self._inventory.clear()
                        self._reported = False  # what was reported may be gone: once caught up
                        continue
                    failures.failed(stream_path, exc)
                # A bug here too must not leave turns waiting for a dead reader.
                except Exception as exc:
                    failures.failed(stream_path, exc)
                if not self._reported and self._offset != START:
                    self._report()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
        finally:
            failures.forget(stream_path)

    async def _apply(self, batch: Batch) -> bool:
        """Apply one batch in order, then save the offset with the inventory it produced."""
        changed = False
        for event in batch.events:
            if event.get("type") == "slash_command":
                changed = self._inventory.apply(event) or changed
            elif self._turn is not None:
                self._turn.feed(event)
        if batch.offset != self._offset or changed:
            self._offset = batch.offset
            self._dirty = True
            await self._save()
        return changed

    async def _save(self) -> None:
        if not self._dirty or self._entity is None:
            return
        self._dirty = False
        try:
            await self.runtime.store.set(
                self.state_key,
                {
                    "server": self.runtime.client.shown,
                    "stream": self._entity.streams.main,
                    "offset": self._offset,
                    "commands": self._inventory.snapshot(),
                },
            )
        except BaseException:
            self._dirty = True  # cancelled or failed: ``close`` saves it
            raise

    def _report(self) -> None:
        self._reported = True
        self._updates(
            SessionUpdated(
                commands=self._inventory.commands(), capabilities={"supports_commands": True}
            )
        )

    def declare(self, static: tuple[Command, ...]) -> None:
        """The type's list changed (read by this or another conversation): commands declared
        after this entity was created join its inventory.
        """
        if self._inventory.declare(static) and self._reported:
            self._report()

    async def refresh_commands(self) -> None:
        """An input named a command this entity does not list: the type's list is read again
        (at most once per ``type_refresh``), waiting at most ``REFRESH_WAIT`` for it.
        """
        if self._reader is None:
            return  # not open yet: the open reads the type anyway
        try:
            async with asyncio.timeout(REFRESH_WAIT):
                await self.runtime.declared()
        except REQUEST_ERRORS as exc:
            log.warning("cannot read the type's commands again: %s", exc)

    def _stream_closed(self) -> None:
        log.info("the stream of %s is closed (the entity stopped)", self.entity_id)
        if self._turn is not None:
            self._turn.finish(ErrorEvent("generic", "the agent's entity was stopped"))

    # -- turns ----------------------------------------------------------------------------

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        failure = await self._request(self.ensure())
        if failure is not None:
            yield failure
            return
        with contextlib.suppress(*REQUEST_ERRORS):  # the send tells the user what fails
            await self.runtime.declared()  # commands declared since, once in a while
        state = EntityTurn(f"slashgate-{uuid.uuid4().hex}")
        self._turn = state  # before the send: its events may arrive before the answer does
        message = {**turn.message.model_dump(mode="json", exclude_none=True), "key": state.key}
        payload = message["payload"]
        if payload.get("nodes"):  # a path that leaves the agent's folder goes as text
            payload["nodes"] = as_text_outside(payload["nodes"])
        message["payload"] = with_parts(payload, turn.attachments)
        try:
            principal = user_principal(self.key, turn.user)
            type_name = self.runtime.entity_type
            send = self.runtime.client.send_as_user(type_name, self.entity_id, message, principal)
            failure = await self._request(send)
            if failure is not None:
                yield failure
                return
            while True:
                event = await state.events.get()
                yield event
                if isinstance(event, (MessageEnd, ErrorEvent)):
                    return
        finally:
            # A turn left before its run ended (the deadline, shutdown) stays known until the
            # next one, so that ``cancel`` still interrupts the agent.
            if self._turn is state and state.done:
                self._turn = None

    async def _request(self, call: Awaitable[None]) -> ErrorEvent | None:
        """Await one step of a turn that talks to the server: None, or the user's failure."""
        try:
            await call
        except ElectricError as exc:
            return http_failure(exc)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return network_failure(self.runtime.client.shown, exc)
        return None

    async def cancel(self) -> None:
        state = self._turn
        if state is None or state.done:
            return
        try:
            await self.runtime.client.signal(self.runtime.entity_type, self.entity_id, "SIGINT")
        except REQUEST_ERRORS as exc:
            log.warning("SIGINT to %s failed: %s", self.entity_id, exc)
        # The aborted run's end may never be told apart from later runs: stop here.
        state.finish(MessageEnd("cancelled"))

    async def reset(self) -> None:
        """``/new``: the next open of this conversation uses a new entity (a fresh agent).
        The base entity's tag records it on the server, the store keeps it; the old entity's
        stream position goes, nothing reads that stream again.
        """
        await self.close()
        try:
            await self._resolve()
        except REQUEST_ERRORS as exc:
            log.error("/new in %s is lost: its entity is unknown (%s)", self.key, exc)
            return
        old = self.state_key
        self.generation = (self.generation or 0) + 1
        type_name = self.runtime.entity_type
        try:
            await self.runtime.client.set_tag(
                type_name, self.base_id, GENERATION_TAG, str(self.generation)
            )
        except REQUEST_ERRORS as exc:
            log.warning("cannot tag %s with generation %d: %s", self.base_id, self.generation, exc)
        await self.runtime.store.set(self.runtime.generation_key(self.key), self.generation)
        await self.runtime.store.delete(old)

    async def close(self) -> None:
        self.runtime.sessions.discard(self)
        if self._turn is not None:
            self._turn.finish(MessageEnd("cancelled"))
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        try:
            await self._save()  # what was applied is what a restart resumes after
        except Exception:
            log.exception("cannot save the stream offset of %s", self.entity_id)


def _tagged_generation(base: Entity) -> int:
    tag = base.tags.get(GENERATION_TAG)
    if tag is None:
        return 0
    if not tag.isascii() or not tag.isdigit():
        log.warning(
            "%s has a malformed %s tag %r; using the entity itself", base.url, GENERATION_TAG, tag
        )
        return 0
    return int(tag)


def _matches(saved: Any, server: str, stream_path: str) -> TypeGuard[dict[str, Any]]:
    """A saved position of this very stream (not of another server or an older entity)."""
    return (
        isinstance(saved, dict)
        and saved.get("server") == server
        and saved.get("stream") == stream_path
        and isinstance(saved.get("offset"), str)
    )
