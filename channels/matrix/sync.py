"""The bot's sync with its homeserver, on the server's own event loop: long-polled ``/sync``
from the position kept in the state store, each batch handled (invitations, membership, the
rooms' messages journaled) before the position moves past it, so a restart neither replays
what was answered nor loses what came meanwhile (past a batch's hundred events a room, the
rest read back: ``gap``). A sync that fails is tried again, waiting
longer each time; while it fails the channel is not ready (``/readyz`` answers 503).

The first sync of a bot with no position takes the rooms as they are without answering their
history: the position starts there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.errors import MatrixError, MUnknownToken
from mautrix.types import FilterID, PresenceState, RoomID, SyncToken

from gateway.api import Store, StoreUnavailable

from .gap import before, missed
from .intake import Intake
from .invites import Invites, invitation
from .rooms import Rooms

log = logging.getLogger("slashgate.matrix")

KEEP = 10 * 365 * 24 * 3600.0  # seconds: the position is kept for good
RETRY_FIRST = 0.5  # seconds before the first retry of a failed sync
RETRY_CAP = 30.0
JOINS_LOOKED_AT = 20  # the bot's latest membership events read for its join in a room


# Everything of a room's timeline since the last sync (its latest hundred events: the earlier
# ones are read back, ``gap``) but the bot's own (each of its replies would wake its sync for
# nothing), no presence. Members are not loaded lazily: Synapse then sends a person's member
# event again in each room's batch once they write in several rooms, and marks their device
# list changed each time (synapse#6162), crypto work with every message for nothing. ``Rooms``
# asks for a room's members when it needs them.
def sync_filter(me: str) -> str:
    return json.dumps(
        {
            "presence": {"not_types": ["*"]},
            "room": {
                "timeline": {"limit": 100, "not_senders": [me]},
                "ephemeral": {"not_types": ["*"]},
            },
        },
        separators=(",", ":"),
    )


FIRST_FILTER = json.dumps({"room": {"timeline": {"limit": 1}}}, separators=(",", ":"))

# The crypto side of a batch (to-device messages, device lists), run before its rooms.
CryptoStep = Callable[[dict[str, Any]], Awaitable[None]]


class Sync:
    def __init__(
        self,
        client: ClientAPI,
        store: Store,
        key: str,
        intake: Intake,
        rooms: Rooms,
        invites: Invites,
        changed: Callable[[list[str]], None],
        timeout: float,
    ) -> None:
        self.client = client
        self.store = store
        self.key = key
        self.intake = intake
        self.rooms = rooms
        self.invites = invites
        # Rooms whose offered commands may differ: new to the bot, or someone joined, was
        # invited or left (a direct room with a second person is no longer one).
        self.changed = changed
        self.timeout = timeout
        self.filter = FilterID(sync_filter(str(client.mxid)))
        self.crypto: CryptoStep | None = None
        self.sign_in: Callable[[], Awaitable[None]] | None = None  # a password login, if any
        self.failing: str | None = "not synced yet"
        self.synced = asyncio.Event()  # set once a batch was handled
        self.known: set[str] = set()  # the rooms the bot is in
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="matrix sync")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def run(self) -> None:
        since: str | None = None
        loaded = False
        delay = RETRY_FIRST
        while True:
            try:
                if not loaded:
                    found = await self.store.recall(self.key)
                    since, loaded = (found if isinstance(found, str) else None), True
                first = since is None
                data = await self.client.sync(
                    since=SyncToken(since) if since else None,
                    # The first sync of a run answers at once: ready without waiting for news.
                    timeout=0 if first or not self.synced.is_set() else int(self.timeout * 1000),
                    filter_id=FilterID(FIRST_FILTER) if first else self.filter,
                    set_presence=PresenceState.ONLINE,
                )
                await self.handle(data, since)
                since = str(data["next_batch"])
                await self.store.remember(self.key, since, KEEP)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any: a sync task that ended would leave the bot deaf
                self.failing = f"sync failed: {type(exc).__name__}: {exc}"
                if isinstance(exc, MUnknownToken) and self.sign_in is not None:
                    # The token was revoked (a "log out everywhere"): a bot with a password
                    # signs in again, as the same device, rather than stay out for good.
                    try:
                        await self.sign_in()
                        self.failing += "; signed in again"
                    except (MatrixError, OSError) as again:
                        self.failing += f"; signing in again failed: {again}"
                expected = (MatrixError, OSError, StoreUnavailable, KeyError, TimeoutError)
                # Not one of the expected failures: a bug, or what an event made of one.
                report = log.warning if isinstance(exc, expected) else log.exception
                report("%s; trying again in %.1f s", self.failing, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_CAP)
                continue
            self.failing = None
            self.synced.set()
            delay = RETRY_FIRST

    async def joined_at(self, room_id: str) -> int:
        """When the bot last joined ``room_id`` (its homeserver's clock, milliseconds): a
        room new to this run may come with its history, which the bot must not answer (a
        command planted before it was invited would run). Its own events are not in its sync
        (``sync_filter``), so it asks the room for its latest membership events: the newest
        join that was one (a profile change is a "join" after a join, not a new one).
        """
        only = {"types": ["m.room.member"], "senders": [str(self.client.mxid)]}
        path = Path.v3.rooms[RoomID(room_id)].messages
        query = {"dir": "b", "limit": str(JOINS_LOOKED_AT), "filter": json.dumps(only)}
        found = await self.client.api.request(Method.GET, path, query_params=query)
        joined = 0
        for event in found.get("chunk", []):
            if not isinstance(event, dict) or event.get("content", {}).get("membership") != "join":
                continue
            joined = int(event.get("origin_server_ts", 0))
            before = event.get("unsigned", {}).get("prev_content", {}).get("membership")
            if before != "join":
                break  # the join itself; else the oldest seen, profile changes after it
        return joined

    async def handle(self, data: dict[str, Any], since: str | None) -> None:
        """One batch from the position ``since`` (None: the first sync): its crypto,
        invitations, rooms left, then each joined room's state and timeline (messages
        journaled, not on the first sync; a limited timeline's gap first, ``missed``), and
        the rooms whose commands may differ told. Raises StoreUnavailable when a message
        could not be journaled, MatrixError or OSError when a gap could not be read: the
        batch comes again.
        """
        first = since is None
        if self.crypto is not None:
            await self.crypto(data)
        rooms = data.get("rooms", {})
        for room_id, room in rooms.get("invite", {}).items():
            invited = invitation(self.client.mxid, room)
            if invited is not None:
                await self.invites.welcome(room_id, *invited)
        for room_id in rooms.get("leave", {}):
            self.rooms.left(room_id)
            self.known.discard(room_id)
            # Kicked, banned or gone: a turn running there (its threads' too) has no one to
            # answer, and a moderator's kick is how a room stops the bot.
            self.intake.left(room_id)
        changed = []
        for room_id, room in rooms.get("join", {}).items():
            timeline = room.get("timeline", {})
            events = timeline.get("events", [])
            gap = since is not None and timeline.get("limited") and timeline.get("prev_batch")
            joined = 0  # milliseconds: what was written before the bot joined is not for it
            moved = room_id not in self.known
            if moved:
                if not first and (gap or any("state_key" not in event for event in events)):
                    joined = await self.joined_at(room_id)
                self.known.add(room_id)
            if gap:
                # The gap's state changes are in the room's state block (the state where the
                # timeline begins): its messages alone are taken, before the timeline's.
                skipped = await missed(self.client, room_id, str(gap), str(since), joined)
                events = [event for event in skipped if "state_key" not in event] + events
            for event in room.get("state", {}).get("events", []):
                moved = self.rooms.seen(room_id, event) or moved
            for event in events:
                if "state_key" in event:
                    moved = self.rooms.seen(room_id, event) or moved
                elif not first and not before(event, joined):
                    await self.intake.take(room_id, event)
            if self.rooms.alone(room_id):  # everyone else left: no one to answer
                await self.invites.leave(room_id, "everyone else left")
            elif moved:
                changed.append(room_id)
        if changed:
            self.changed(changed)
