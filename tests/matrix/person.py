"""A person on the test homeserver, through mautrix as a client: creates rooms, invites the
bot, writes, and waits for what the bot answers (its replies, their edits, reactions), from
the person's own sync.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from mautrix.api import HTTPAPI, Method, Path
from mautrix.client import ClientAPI
from mautrix.types import FilterID, RoomCreatePreset, RoomID, UserID

from .synapse import Account

Event = dict[str, Any]
FILTER = FilterID('{"room":{"timeline":{"limit":50}}}')
WAIT = 120.0  # seconds: generous, a loaded machine is many times slower


def relates(event: Event) -> dict[str, Any]:
    related = event.get("content", {}).get("m.relates_to")
    return related if isinstance(related, dict) else {}


def reply_target(event: Event) -> str | None:
    reply = relates(event).get("m.in_reply_to")
    return reply.get("event_id") if isinstance(reply, dict) else None


class Person:
    def __init__(self, client: ClientAPI) -> None:
        self.client = client
        self.me = str(client.mxid)
        self.events: dict[str, list[Event]] = {}  # room -> its timeline events, in order
        self.invited: list[str] = []
        self.typing: dict[str, set[str]] = {}  # room -> everyone ever seen typing there
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # the first sync is done: what comes next is seen

    async def _sync(self) -> None:
        since = None
        while True:
            data = await self.client.sync(
                since=since, timeout=30_000 if since else 0, filter_id=FILTER
            )
            first = since is None
            since = data["next_batch"]
            if first:
                self.ready.set()
                continue  # earlier tests' rooms: not this test's business
            rooms = data.get("rooms", {})
            for room_id, room in rooms.get("join", {}).items():
                timeline = room.get("timeline", {}).get("events", [])
                self.events.setdefault(room_id, []).extend(timeline)
                for event in room.get("ephemeral", {}).get("events", []):
                    if event.get("type") == "m.typing":
                        users = event.get("content", {}).get("user_ids", [])
                        self.typing.setdefault(room_id, set()).update(users)
            self.invited.extend(rooms.get("invite", {}))
            async with self._changed:
                self._changed.notify_all()

    async def until(self, found: Callable[[], Any], within: float = WAIT) -> Any:
        """The first truthy ``found()``, re-evaluated after each sync."""
        async with asyncio.timeout(within):
            async with self._changed:
                while not (result := found()):
                    await self._changed.wait()
                return result

    def timeline(self, room: str, sender: str | None = None) -> list[Event]:
        return [e for e in self.events.get(room, []) if sender is None or e.get("sender") == sender]

    # -- acting -----------------------------------------------------------------------------

    async def room_with(self, *users: str, direct: bool = True, **options: Any) -> str:
        """A new room with ``users`` invited, once they all joined."""
        room = await self.client.create_room(
            preset=RoomCreatePreset.TRUSTED_PRIVATE if direct else RoomCreatePreset.PRIVATE,
            invitees=[UserID(u) for u in users],
            is_direct=direct,
            **options,
        )
        await self.until(lambda: all(self.joined(room, u) for u in users))
        return str(room)

    def joined(self, room: str, user: str) -> bool:
        return any(
            e.get("type") == "m.room.member"
            and e.get("state_key") == user
            and e.get("content", {}).get("membership") == "join"
            for e in self.events.get(room, [])
        )

    def left(self, room: str, user: str) -> bool:
        return any(
            e.get("type") == "m.room.member"
            and e.get("state_key") == user
            and e.get("content", {}).get("membership") == "leave"
            for e in self.events.get(room, [])
        )

    async def send(self, room: str, text: str, **content: Any) -> str:
        body = {"msgtype": "m.text", "body": text, **content}
        return str(await self.client.send_message_event(RoomID(room), "m.room.message", body))  # type: ignore[arg-type]

    async def send_raw(self, room: str, kind: str, content: dict[str, Any]) -> str:
        path = Path.v3.rooms[RoomID(room)].send[kind][self.client.api.get_txn_id()]
        answer = await self.client.api.request(Method.PUT, path, content)
        return str(answer["event_id"])

    # -- what the bot did -------------------------------------------------------------------

    def replies(self, room: str, to: str, bot: str) -> list[Event]:
        """The bot's messages answering ``to`` (a reply to it, or the thread's)."""
        return [
            e
            for e in self.timeline(room, bot)
            if e.get("type") == "m.room.message"
            and relates(e).get("rel_type") != "m.replace"
            and reply_target(e) == to
        ]

    def shown(self, room: str, event_id: str) -> dict[str, Any]:
        """The content ``event_id`` shows now: its latest edit's new content, or its own."""
        content: dict[str, Any] = {}
        for e in self.events.get(room, []):
            if e.get("event_id") == event_id:
                content = e["content"]
            elif e in self.edits(room, event_id):
                content = e["content"].get("m.new_content", content)
        return content

    def edits(self, room: str, event_id: str) -> list[Event]:
        return [
            e
            for e in self.events.get(room, [])
            if relates(e).get("rel_type") == "m.replace" and relates(e).get("event_id") == event_id
        ]

    async def reply(self, room: str, to: str, bot: str, within: float = WAIT) -> Event:
        """The bot's first reply to ``to``, once there is one."""
        found: Event = await self.until(lambda: (r := self.replies(room, to, bot)) and r[0], within)
        return found

    async def shows(self, room: str, to: str, bot: str, body: str) -> Event:
        """The bot's reply to ``to``, once it shows ``body`` (itself or by an edit)."""
        reply = await self.reply(room, to, bot)
        await self.until(lambda: self.shown(room, reply["event_id"]).get("body") == body)
        return reply

    async def join(self, room: str) -> None:
        await self.client.join_room_by_id(RoomID(room))


@asynccontextmanager
async def person(url: str, account: Account) -> AsyncIterator[Person]:
    async with aiohttp.ClientSession() as session:
        api = HTTPAPI(url, account.token, client_session=session)
        client = ClientAPI(UserID(account.user_id), device_id=account.device_id, api=api)  # type: ignore[arg-type]
        who = Person(client)
        who._task = asyncio.create_task(who._sync())
        try:
            async with asyncio.timeout(WAIT):
                await who.ready.wait()
            yield who
        finally:
            who._task.cancel()
            await asyncio.gather(who._task, return_exceptions=True)
