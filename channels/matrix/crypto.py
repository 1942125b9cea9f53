"""End-to-end encryption: mautrix's ``OlmMachine`` (python-olm) with its stores in one SQLite
file beside the gateway's state (``matrix_crypto_path``): the bot device's Olm account, the
Olm and Megolm sessions, the devices it has seen, and what it knows of the encrypted rooms
(their encryption settings, their members), so that a restart keeps the same device and
reads what was encrypted for it before.

The crypto side of each sync batch runs before its rooms (``step``): to-device messages
(room keys, key requests), device list changes, the one-time key count, and the rooms' state.
Timeline events are decrypted one by one (``decrypt``); what goes to an encrypted room is
encrypted (``seal``), a Megolm session shared first with every device of the room's joined
members. Trust (``matrix_trust``): under ``tofu`` every device of a member is trusted as
first seen (mautrix remembers a device's keys and refuses a device whose keys change); under
``cross_signed`` only the devices their owner cross-signed get the room keys, and a message
read from any other raises ``Untrusted``. The bot verifies no one itself
(docs/internals/decisions.md).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import olm
from mautrix.client import Client
from mautrix.client.state_store.asyncpg import upgrade as state_upgrade
from mautrix.crypto import OlmMachine
from mautrix.crypto.store.asyncpg import PgCryptoStateStore, PgCryptoStore
from mautrix.errors import DecryptionError, MatrixError, MNotFound
from mautrix.types import (
    DeviceID,
    DeviceLists,
    DeviceOTKCount,
    EncryptedEvent,
    EventType,
    IdentityKey,
    RoomID,
    SessionID,
    StateEvent,
    ToDeviceEvent,
    TrustState,
    UserID,
)
from mautrix.util.async_db import Database
from yarl import URL

from gateway.state.private import private_file
from gateway.store import BoundedTTLMap

log = logging.getLogger("slashgate.matrix")

CRYPTO_FILE = "matrix-crypto.sqlite3"  # in data_dir
# Without a pickle key of its own the store's secrets are sealed with this one: the file's
# permissions are what guards them then (docs/matrix.md).
DEFAULT_PICKLE_KEY = "slashgate matrix crypto store"

MAX_ROOMS = 10_000
RECHECK_AFTER = 24 * 3600.0  # seconds a room's encryption is known without asking again

Event = dict[str, Any]

# The least trust a device needs (``matrix_trust``) to get the bot's room keys and to have
# what it encrypted run: any (the bot blacklists no one), or cross-signed by its owner with
# the owner's first master key (a master key that changed is below it).
MIN_TRUST = {"tofu": TrustState.UNVERIFIED, "cross_signed": TrustState.CROSS_SIGNED_TOFU}


class Untrusted(DecryptionError):
    """A message decrypted, but from a device below the trust the bot asks for: not run."""


class _NoCrossSigningNotes(logging.Filter):
    """mautrix warns of every device that is not cross-signed: under trust on first use that
    is the usual case, not a problem worth an operator's attention; under ``cross_signed``
    the bot's own line says what it refused.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.WARNING and "cross-sign" in record.getMessage())


logging.getLogger("mau.crypto").addFilter(_NoCrossSigningNotes())


def crypto_file(path: Path | None, data_dir: Path) -> Path:
    return path if path is not None else data_dir / CRYPTO_FILE


def _prepared(path: Path) -> str:
    """The store's absolute path, its folder made (0700) and the file private (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # new folders only
    private_file(path)
    return str(path.resolve())


class Crypto:
    def __init__(self, client: Client, db: Database, machine: OlmMachine) -> None:
        self.client = client
        self.db = db
        self.machine = machine
        self.min_trust = machine.send_keys_min_trust  # one bar: keys shared, messages run
        # Whether each room is encrypted; a room that turns it on says so in its state.
        self._known: BoundedTTLMap[bool] = BoundedTTLMap(MAX_ROOMS, RECHECK_AFTER)
        # The state events applied to the stores, by event id (an event's state never changes).
        self._applied: BoundedTTLMap[bool] = BoundedTTLMap(MAX_ROOMS, RECHECK_AFTER)

    @classmethod
    async def open(
        cls, client: Client, path: Path, pickle_key: str, min_trust: str = "tofu"
    ) -> Crypto:
        """The machine of the signed-in ``client``'s device, its keys uploaded; it shares
        room keys with the devices of at least ``min_trust`` (a ``MIN_TRUST`` name). A store
        of another device (a token of a new device, a changed device id) starts afresh: its
        account cannot speak for this device.
        """
        url = URL.build(scheme="sqlite", path=await asyncio.to_thread(_prepared, path))
        db = Database.create(url, upgrade_table=PgCryptoStore.upgrade_table)
        try:
            await db.start()
            await state_upgrade.upgrade_table.upgrade(db)
            store = PgCryptoStore(str(client.mxid), pickle_key, db)
            kept = await store.get_device_id()
            if kept and kept != client.device_id:
                log.warning(
                    "the encryption store %s was device %s's, the bot is device %s now: "
                    "new keys (messages encrypted for the old device stay unreadable)",
                    path,
                    kept,
                    client.device_id,
                )
                await store.delete()
            await store.put_device_id(client.device_id)
            state = PgCryptoStateStore(db)
            client.state_store = state  # joins and member lists fetched are recorded there
            machine = OlmMachine(client, store, state)
            machine.send_keys_min_trust = MIN_TRUST[min_trust]  # others get m.room_key.withheld
            # The client's own automatic encryption is not used (``seal`` is), but its
            # group session sharing is: it needs the machine.
            client.crypto = machine
            try:
                await machine.load()
            except olm.OlmAccountError as exc:  # BAD_ACCOUNT_KEY: sealed with another key
                raise ValueError(
                    f"the Matrix encryption store {path} cannot be opened with this "
                    f"matrix_pickle_key ({exc}): set the key it was made with"
                ) from None
            assert machine.account is not None
            if not machine.account.shared:  # a new device; later, sync's key count asks
                await machine.share_keys()
        except BaseException:
            await db.stop()
            raise
        return cls(client, db, machine)

    async def share_keys_again(self) -> None:
        """Upload the device's keys again (a new login as the same device)."""
        account = self.machine.account
        assert account is not None  # loaded in ``open``
        account.shared = False
        await self.machine.share_keys()

    async def close(self) -> None:
        await self.db.stop()

    @property
    def device(self) -> tuple[str, str]:
        """This device: its id and its identity (curve25519) key."""
        account = self.machine.account
        assert account is not None  # loaded in ``open``
        return str(self.client.device_id), str(account.identity_key)

    # -- sync -------------------------------------------------------------------------------

    async def step(self, data: dict[str, Any]) -> None:
        """The crypto side of a sync batch, before its rooms: the room keys its messages
        need arrive as to-device messages of the same batch or an earlier one.
        """
        machine = self.machine
        for raw in data.get("to_device", {}).get("events", []):
            await self._to_device(raw)
        lists = data.get("device_lists", {})
        if lists.get("changed") or lists.get("left"):
            await machine.handle_device_lists(
                DeviceLists(changed=lists.get("changed", []), left=lists.get("left", []))
            )
        count = data.get("device_one_time_keys_count")
        if isinstance(count, dict):
            await machine.handle_otk_count(
                DeviceOTKCount(
                    curve25519=count.get("curve25519", 0),
                    signed_curve25519=count.get("signed_curve25519", 0),
                )
            )
        for room_id, room in data.get("rooms", {}).get("join", {}).items():
            state = room.get("state", {}).get("events", [])
            timeline = room.get("timeline", {}).get("events", [])
            for raw in [*state, *(e for e in timeline if "state_key" in e)]:
                # An event applied already is skipped: a batch handled again after a failure
                # brings its state again (a store write each).
                event_id = raw.get("event_id")
                if isinstance(event_id, str) and self._applied.get(event_id):
                    continue
                await self._state(room_id, raw)
                if isinstance(event_id, str):
                    self._applied.set(event_id, True)

    async def _to_device(self, raw: Event) -> None:
        try:
            event = ToDeviceEvent.deserialize(raw)  # type: ignore[arg-type]
            if event.type == EventType.TO_DEVICE_ENCRYPTED:
                await self.machine.handle_to_device_event(event)
            elif event.type == EventType.ROOM_KEY_REQUEST:
                await self.machine.handle_room_key_request(event)
        except Exception as exc:  # mautrix's parsers raise what they like (SerializerError)
            # One bad message, which anyone may send to the bot's device, must not hold the
            # sync: the batch would come again, forever.
            kind, sender = raw.get("type"), raw.get("sender")
            log.warning("a to-device %s from %s was dropped: %s", kind, sender, exc)

    async def _state(self, room_id: str, raw: Event) -> None:
        kind = raw.get("type")
        if kind not in ("m.room.member", "m.room.encryption"):
            return
        try:
            event = StateEvent.deserialize({**raw, "room_id": room_id})  # type: ignore[arg-type]
        except (ValueError, KeyError, TypeError) as exc:
            log.debug("state event not understood: %s", exc)
            return
        state = self.machine.state_store
        assert isinstance(state, PgCryptoStateStore)
        try:
            await state.update_state(event)
            if event.type == EventType.ROOM_ENCRYPTION:
                self._known.set(room_id, True)
            if event.type == EventType.ROOM_MEMBER:
                # Someone joined or left: the room's next message goes in a new Megolm session.
                await self.machine.handle_member_event(event)
        except Exception as exc:  # as for to-device messages: the sync goes on
            log.warning("state event %s of %s not applied: %s", raw.get("event_id"), room_id, exc)

    # -- incoming ---------------------------------------------------------------------------

    async def decrypt(self, room_id: str, event: Event) -> Event:
        """The event as it was before it was encrypted (its id, sender and time kept).
        Raises ``SessionNotFound`` when its room key never came, ``Untrusted`` when it came
        from a device below ``min_trust``, ``DecryptionError`` when it cannot be read
        otherwise.
        """
        try:
            sealed = EncryptedEvent.deserialize({**event, "room_id": room_id})  # type: ignore[arg-type]
        except (ValueError, KeyError, TypeError) as exc:
            raise DecryptionError(f"not an encrypted event: {exc}") from None
        try:
            opened = (await self.machine.decrypt_megolm_event(sealed)).serialize()
        except DecryptionError:
            raise
        except Exception as exc:  # a plaintext of the wrong shape (a list, a string): unread
            raise DecryptionError(f"its plaintext cannot be read: {type(exc).__name__}") from None
        # The trust it was read with (not for the journal); unsaid, the least.
        trust = TrustState(opened.pop("mautrix", {}).get("trust_state", TrustState.UNVERIFIED))
        if trust < self.min_trust:
            device = sealed.content.device_id or "(not named)"
            raise Untrusted(
                f"sent from device {device}, trust {trust}: matrix_trust asks for "
                f"{self.min_trust} at least"
            )
        return dict(opened)

    async def request_key(self, room_id: str, event: Event, wait: float) -> bool:
        """Ask the sender's devices for the room key of ``event`` (which ``decrypt`` could
        not find); True once it came, within ``wait`` seconds.
        """
        content = event.get("content", {})
        session = content.get("session_id")
        if not isinstance(session, str):
            return False
        # Deprecated in events since Matrix 1.3 (newer clients leave it out); the session
        # id is what devices look keys up by.
        sender_key = str(content.get("sender_key") or "")
        device = content.get("device_id")
        devices = {UserID(str(event.get("sender"))): [DeviceID(str(device or "*"))]}
        room = RoomID(room_id)
        try:  # not waited for here: the key may come as a room key as well as forwarded
            await self.machine.request_room_key(
                room, IdentityKey(sender_key), SessionID(session), devices, 0
            )
        except (MatrixError, OSError) as exc:
            log.warning("the room key of %s was not requested: %s", event.get("event_id"), exc)
        return await self.machine.wait_for_session(room, SessionID(session), wait)

    # -- outgoing ---------------------------------------------------------------------------

    async def encrypted(self, room_id: str) -> bool:
        """Whether the room is encrypted, kept in memory (each send asks): as sync told
        (``_state``), else as the store or the homeserver answers.
        """
        known = self._known.get(room_id)
        if known is None:
            known = await self._look_up(RoomID(room_id))
            self._known.set(room_id, known)
        return known

    async def _look_up(self, room: RoomID) -> bool:
        state = self.machine.state_store
        assert isinstance(state, PgCryptoStateStore)
        if await state.is_encrypted(room):
            return True
        try:  # a room whose state the bot has not seen since the store was made
            await self.client.get_state_event(room, EventType.ROOM_ENCRYPTION)
        except MNotFound:
            return False
        return True

    async def seal(self, room_id: str, kind: str, content: Event) -> tuple[str, Event]:
        """``(type, content)`` to send: encrypted in an encrypted room, else as given."""
        if not await self.encrypted(room_id):
            return kind, content
        room, event_type = RoomID(room_id), EventType.find(kind)
        sealed = await self.client.encrypt(room, event_type, content)  # type: ignore[arg-type]
        return "m.room.encrypted", sealed.serialize()
