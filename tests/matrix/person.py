"""A person on the test homeserver, through mautrix as a client: creates rooms, invites the
bot, writes, and waits for what the bot answers (its replies, their edits, reactions), from
the person's own sync. An ``encrypted`` person is a device of its own with the channel's
encryption (``channels.matrix.crypto``): it writes encrypted in encrypted rooms and reads the
bot's encrypted answers as their clear events.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path as FilePath
from typing import Any

import aiohttp
from mautrix.api import HTTPAPI, Method, Path
from mautrix.client import Client
from mautrix.crypto.attachments import encrypt_attachment
from mautrix.errors import DecryptionError
from mautrix.types import DeviceID, FilterID, LoginType, RoomCreatePreset, RoomID, UserID

from channels.matrix.crypto import Crypto

from .synapse import Account

Event = dict[str, Any]
FILTER = FilterID('{"room":{"timeline":{"limit":50}}}')
WAIT = 120.0  # seconds: generous, a loaded machine is many times slower
ENCRYPTION = {"type": "m.room.encryption", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}


def relates(event: Event) -> dict[str, Any]:
    related = event.get("content", {}).get("m.relates_to")
    return related if isinstance(related, dict) else {}


def reply_target(event: Event) -> str | None:
    reply = relates(event).get("m.in_reply_to")
    return reply.get("event_id") if isinstance(reply, dict) else None


class Person:
    def __init__(self, client: Client, crypto: Crypto | None = None) -> None:
        self.client = client
        self.crypto = crypto
        self.me = str(client.mxid)
        self.to_device: list[Event] = []  # what came to this device
        self.sealed: set[str] = set()  # the ids of the events that came encrypted
        self.events: dict[str, list[Event]] = {}  # room -> its timeline events, in order
        self.invited: list[str] = []
        self.typing: dict[str, set[str]] = {}  # room -> everyone ever seen typing there
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()  # the first sync is done: what comes next is seen
        self._sealed: list[tuple[str, int]] = []  # (room, index) of events not decrypted yet

    async def _sync(self) -> None:
        since = None
        while True:
            data = await self.client.sync(
                since=since, timeout=30_000 if since else 0, filter_id=FILTER
            )
            first = since is None
            since = data["next_batch"]
            self.to_device.extend(data.get("to_device", {}).get("events", []))
            if self.crypto is not None:
                await self.crypto.step(data)
            if first:
                self.ready.set()
                continue  # earlier tests' rooms: not this test's business
            rooms = data.get("rooms", {})
            for room_id, room in rooms.get("join", {}).items():
                timeline = room.get("timeline", {}).get("events", [])
                events = self.events.setdefault(room_id, [])
                for i, event in enumerate(timeline):
                    if event.get("type") == "m.room.encrypted":
                        self.sealed.add(event["event_id"])
                        self._sealed.append((room_id, len(events) + i))
                events.extend(timeline)
                for event in room.get("ephemeral", {}).get("events", []):
                    if event.get("type") == "m.typing":
                        users = event.get("content", {}).get("user_ids", [])
                        self.typing.setdefault(room_id, set()).update(users)
            await self._decrypt()
            self.invited.extend(rooms.get("invite", {}))
            async with self._changed:
                self._changed.notify_all()

    async def _decrypt(self) -> None:
        """Encrypted events as their clear events, in place; one whose key has not come yet
        is tried again after the next sync.
        """
        if self.crypto is None:
            return
        waiting = []
        for room, index in self._sealed:
            try:
                self.events[room][index] = await self.crypto.decrypt(room, self.events[room][index])
            except DecryptionError:
                waiting.append((room, index))
        self._sealed = waiting

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
        return await self.send_raw(room, "m.room.message", body)

    async def send_raw(self, room: str, kind: str, content: dict[str, Any]) -> str:
        """An event as given: encrypted first in an encrypted room by an encrypted person."""
        if self.crypto is not None and kind != "m.room.encrypted":
            kind, content = await self.crypto.seal(room, kind, content)
        path = Path.v3.rooms[RoomID(room)].send[kind][self.client.api.get_txn_id()]
        answer = await self.client.api.request(Method.PUT, path, content)
        return str(answer["event_id"])

    async def send_file(self, room: str, name: str, data: bytes) -> str:
        """A text file; in an encrypted room by an encrypted person, an encrypted one."""
        content: dict[str, Any] = {
            "msgtype": "m.file",
            "body": name,
            "info": {"size": len(data), "mimetype": "text/plain"},
        }
        sealed = None
        if self.crypto is not None and await self.crypto.encrypted(room):
            data, sealed = encrypt_attachment(data)
        mxc = str(await self.client.upload_media(data, mime_type="text/plain", filename=name))
        if sealed is None:
            content["url"] = mxc
        else:
            content["file"] = {**sealed.serialize(), "url": mxc}
        return await self.send_raw(room, "m.room.message", content)

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
async def person(url: str, account: Account, encrypted: bool = False) -> AsyncIterator[Person]:
    """The account's person; ``encrypted``: as a new device (a login) with its keys, logged
    out at the end, so no later test encrypts for it.
    """
    async with aiohttp.ClientSession() as session:
        api = HTTPAPI(url, "" if encrypted else account.token, client_session=session)
        # Encrypted: no device yet (a login with the account's would end its token's).
        device = DeviceID("" if encrypted else account.device_id)
        client = Client(UserID(account.user_id), device_id=device, api=api)
        with tempfile.TemporaryDirectory() as folder:
            crypto = None
            if encrypted:
                await client.login(
                    identifier=UserID(account.user_id),
                    login_type=LoginType.PASSWORD,
                    password=account.password,
                    store_access_token=True,
                )
                crypto = await Crypto.open(client, FilePath(folder) / "crypto.sqlite3", "test")
            who = Person(client, crypto)
            who._task = asyncio.create_task(who._sync())
            try:
                async with asyncio.timeout(WAIT):
                    ready = asyncio.ensure_future(who.ready.wait())
                    await asyncio.wait((ready, who._task), return_when=asyncio.FIRST_COMPLETED)
                    ready.cancel()
                if who._task.done():
                    who._task.result()  # its sync failed: say why, not a timeout later
                yield who
            finally:
                who._task.cancel()
                await asyncio.gather(who._task, return_exceptions=True)
                if crypto is not None:
                    await crypto.close()
                    await client.logout()
