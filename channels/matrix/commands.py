"""The inventory published to each room the bot is in, as the in-room bot commands proposals'
state events, so that clients implementing them offer the commands: MSC4332's one event of
the bot (``org.matrix.msc4332.commands``, the sigil ``/``, each command's syntax with its
hint as a variable) and MSC4391's event per command (``org.matrix.msc4391.command_description``,
its state key the hash the proposal names; a withdrawn command's event emptied). Both under
their unstable prefixes.

A room's events are written only when they differ from what it holds (read once per room),
and a burst of inventory changes is published once; the rooms that changed last go first. A
room where the bot may not send state events (its power level) is left alone.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.errors import MatrixError, MForbidden, MLimitExceeded
from mautrix.types import RoomID

from contract import Command
from gateway.tasks import BackgroundTasks

log = logging.getLogger("slashgate.matrix")

MSC4332 = "org.matrix.msc4332.commands"
MSC4391 = "org.matrix.msc4391.command_description"
DEBOUNCE = 1.0  # seconds: a burst of changes is published once


def text(body: str) -> dict[str, Any]:
    return {"m.text": [{"body": body}]}


def msc4332(commands: Iterable[Command]) -> dict[str, Any]:
    listed = []
    for command in commands:
        item: dict[str, Any] = {"syntax": command.name, "description": text(command.description)}
        if command.hint:
            item["syntax"] = f"{command.name} {{args}}"
            item["variables"] = {"args": text(command.hint)}
        listed.append(item)
    return {"sigil": "/", "commands": listed}


def msc4391_key(name: str, me: str) -> str:
    return base64.b64encode(hashlib.sha256((name + me).encode()).digest()).decode()


def msc4391(command: Command) -> dict[str, Any]:
    content: dict[str, Any] = {"command": command.name, "description": text(command.description)}
    if command.hint:
        content["parameters"] = [
            {"key": "args", "type": "string", "description": text(command.hint), "required": False}
        ]
    return content


def room_state(commands: Iterable[Command], me: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The state events (type, state key) -> content that publish ``commands``; none for no
    commands (a room that offers nothing gets no event, one that offered some has them emptied).
    """
    commands = tuple(commands)
    if not commands:
        return {}
    state = {(MSC4332, me): msc4332(commands)}
    for command in commands:
        state[(MSC4391, msc4391_key(command.name, me))] = msc4391(command)
    return state


class Publisher:
    def __init__(
        self,
        client: ClientAPI,
        me: str,
        inventory: Callable[[str], Awaitable[tuple[Command, ...] | None]],
        write: Callable[[str, str, str, dict[str, Any]], Awaitable[None]],
    ) -> None:
        self.client = client
        self.me = me
        self.inventory = inventory  # a room's commands; None until the runtime reported some
        self.write = write  # (room, type, state key, content): a state event, paced and retried
        self.debounce = DEBOUNCE
        self._held: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}  # room -> its state
        self._due: set[str] = set()  # changed, waiting out the debounce
        # Rooms to publish, the latest flushed last (and taken first): see ``_publish_queued``.
        self._queue: OrderedDict[str, None] = OrderedDict()
        self._soon: asyncio.TimerHandle | None = None
        self._tasks = BackgroundTasks()
        self._lock = asyncio.Lock()

    def changed(self, rooms: Iterable[str]) -> None:
        """These rooms' commands may have changed: published after the debounce."""
        self._due.update(rooms)
        if self._soon is None and self._due:
            self._soon = asyncio.get_running_loop().call_later(self.debounce, self._flush)

    def _flush(self) -> None:
        self._soon = None
        for room in self._due:
            self._queue[room] = None
            self._queue.move_to_end(room)
        self._due = set()
        self._tasks.spawn(self._publish_queued())

    async def _publish_queued(self) -> None:
        async with self._lock:  # one room at a time: the state each one read stays true
            while self._queue:
                # The latest flushed first: a room the bot just joined does not wait behind a
                # start-up's pass over every room it is in (minutes at a homeserver's limit).
                room, _ = self._queue.popitem()
                try:
                    await self.publish(room)
                except MForbidden:
                    log.info("no power to publish commands in %s; left as it is", room)
                except MLimitExceeded:  # still, after the retries: the room's turn comes again
                    log.warning("publishing commands in %s was rate limited; again later", room)
                    self.changed([room])
                except (MatrixError, OSError) as exc:
                    log.warning("publishing commands in %s failed: %s", room, exc)

    async def publish(self, room: str) -> int:
        """Write what differs in ``room``; how many events were written."""
        commands = await self.inventory(room)
        if commands is None:
            return 0
        held = self._held.get(room)
        if held is None:
            held = await self._read(room)
        wanted = room_state(commands, self.me)
        for key in held:  # a withdrawn command: its event emptied
            if key not in wanted and held[key]:
                wanted[key] = {}
        written = 0
        for (kind, state_key), content in wanted.items():
            if held.get((kind, state_key), {}) == content:
                continue
            await self.write(room, kind, state_key, content)
            held[(kind, state_key)] = content
            written += 1
        self._held[room] = held
        return written

    async def _read(self, room: str) -> dict[tuple[str, str], dict[str, Any]]:
        events = await self.client.api.request(Method.GET, Path.v3.rooms[RoomID(room)].state)
        return {
            (e["type"], str(e.get("state_key"))): e.get("content") or {}
            for e in events
            if isinstance(e, dict)
            and e.get("type") in (MSC4332, MSC4391)
            and e.get("sender") == self.me
        }

    def forget(self, room: str) -> None:
        self._held.pop(room, None)

    async def aclose(self) -> None:
        if self._soon is not None:
            self._soon.cancel()
        await self._tasks.aclose()
