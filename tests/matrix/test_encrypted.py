"""An encrypted direct message (what Element makes by default): the bot reads it and answers
encrypted, a reply streamed by edits and a permission answered by an encrypted reaction; a
restart is the same device, which still reads the room and its encrypted files; a message
without its room key asks for it and is answered once it came, or, when it never comes, gets
one notice, not silence. Under ``matrix_trust = "cross_signed"`` a person's cross-signed
session is answered, while their session that is not gets no room key and what it writes is
not run (a notice says why). A pickle key that does not open the store says so. The parity
corpus in encrypted rooms is test_parity.py's.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from mautrix.api import HTTPAPI
from mautrix.client import Client
from mautrix.crypto.attachments import decrypt_attachment
from mautrix.types import (
    ContentURI,
    DeviceID,
    DeviceIdentity,
    RequestedKeyInfo,
    RoomID,
    SessionID,
    UserID,
)

from channels.matrix.crypto import Crypto
from channels.matrix.messages import UNDECRYPTABLE, UNTRUSTED
from channels.matrix.permissions import KEYCAPS
from contract import Command
from gateway.events import (
    FileReturned,
    MessageDelta,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
)
from tests.telegram.helpers import Scripted

from .conftest import Outcomes, Start, channel_of
from .person import ENCRYPTION, Person, person, relates
from .synapse import Synapse

pytestmark = pytest.mark.xdist_group("matrix")

KEY_WAIT = 0.5  # seconds the bot waits for a missing room key here
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def bogus(alice: Person, session: str) -> dict[str, object]:
    """Megolm content of ``session``, a session the bot was never given the key of."""
    assert alice.crypto is not None
    device, identity = alice.crypto.device
    return {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": "AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg",
        "sender_key": identity,
        "session_id": session,
        "device_id": device,
    }


def asked_for(alice: Person, session: str) -> list[dict[str, Any]]:
    """The room key requests for ``session`` that came to the person's device."""
    return [
        e
        for e in alice.to_device
        if e["type"] == "m.room_key_request" and e["content"]["body"]["session_id"] == session
    ]


async def forward(device: DeviceIdentity, request: RequestedKeyInfo) -> bool:
    """Every room key asked for is forwarded (a device's own choice; mautrix's default
    forwards only to its account's verified devices).
    """
    return True


async def test_an_encrypted_direct_message_is_read_and_answered_encrypted_across_a_restart(
    matrix: Start, synapse: Synapse, bot_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = Scripted(Command(name="work", description="Work"))
    async with person(synapse.url, synapse.account("alice"), encrypted=True) as alice:
        async with matrix(runtime) as served:
            device = channel_of(served).crypto.device  # type: ignore[union-attr]
            room = await alice.room_with(bot_id, initial_state=[ENCRYPTION])
            asked = await alice.send(room, "/work")
            turn = await runtime.next_turn()
            turn.emit(MessageDelta("First part"))
            notice = await alice.reply(room, asked, bot_id)
            turn.emit(PermissionRequired("r1", "Delete build/?", (PermissionOption("ok", "Ok"),)))
            prompt = await alice.until(
                lambda: [r for r in alice.replies(room, asked, bot_id) if "build/" in str(r)]
            )
            relation = {"rel_type": "m.annotation", "event_id": prompt[0]["event_id"]}
            await alice.send_raw(
                room, "m.reaction", {"m.relates_to": {**relation, "key": KEYCAPS[0]}}
            )
            assert await turn.answer("r1") == "ok"
            turn.emit(MessageDelta(", second part."), FileReturned("chart.png", "image/png", PNG))
            turn.emit(MessageEnd())
            await alice.until(
                lambda: (
                    alice.shown(room, notice["event_id"]).get("body") == "First part, second part."
                )
            )
            assert alice.edits(room, notice["event_id"])
            # A file the agent returns: the homeserver holds only its ciphertext, the key is
            # in the (encrypted) message.
            [image] = await alice.until(
                lambda: [
                    r["content"]
                    for r in alice.replies(room, asked, bot_id)
                    if r["content"].get("msgtype") == "m.image"
                ]
            )
            assert "url" not in image and image["body"] == "chart.png"
            held = await alice.client.download_media(ContentURI(image["file"]["url"]))
            assert held != PNG
            key, sha, iv = (
                image["file"]["key"]["k"],
                image["file"]["hashes"]["sha256"],
                image["file"]["iv"],
            )
            assert decrypt_attachment(held, key, sha, iv) == PNG

            # A message whose room key did not come with it: the key is asked of the
            # sender's device, which forwards it (this person's device answers the bot),
            # and the message is answered once it came.
            assert alice.crypto is not None
            machine = alice.crypto.machine
            machine.allow_key_share = forward  # type: ignore[method-assign]
            await machine.crypto_store.remove_outbound_group_session(RoomID(room))
            await machine.share_group_session(RoomID(room), [UserID(alice.me)])  # not the bot's
            late = await alice.send(room, "/work late")
            (await runtime.next_turn()).emit(MessageDelta("read late"), MessageEnd())
            await alice.shows(room, late, bot_id, "read late")

            # A message whose room key never came: the key is asked of the sender's device,
            # and when it does not come, one notice says so; another of its session, none.
            channel_of(served).intake.key_wait = KEY_WAIT  # type: ignore[union-attr]
            lost = await alice.send_raw(room, "m.room.encrypted", bogus(alice, "lost"))
            told = await alice.reply(room, lost, bot_id)
            assert told["content"]["body"] == UNDECRYPTABLE
            await alice.until(lambda: len(asked_for(alice, "lost")) == 1)  # the key was asked for
            again = await alice.send_raw(room, "m.room.encrypted", bogus(alice, "lost"))
            await alice.until(lambda: len(asked_for(alice, "lost")) == 2)  # the bot waits
            await channel_of(served).intake.drain()  # type: ignore[union-attr]

        # The same device after a restart: what the person's session encrypts it still reads.
        async with matrix() as served:
            assert channel_of(served).crypto.device == device  # type: ignore[union-attr]
            outcomes = Outcomes(served.gateway, monkeypatch)
            after = await alice.send(room, "/echo still here")
            await alice.shows(room, after, bot_id, "still here")
            sent = await alice.send_file(room, "notes.txt", b"hello from a file")
            await alice.shows(room, sent, bot_id, "You sent notes.txt (text/plain, 17 bytes).")
            message, _ = await outcomes.of(sent)
            assert [a.data for a in message.attachments] == [b"hello from a file"]
        assert alice.replies(room, again, bot_id) == []
        for event in alice.timeline(room, bot_id):
            if event["type"] in ("m.room.message", "m.reaction"):
                assert event["event_id"] in alice.sealed, event  # nothing went out in clear
        assert relates(prompt[0]).get("m.in_reply_to") == {"event_id": asked}


async def test_a_conversation_does_no_device_list_work_for_every_message(
    matrix: Start, synapse: Synapse, bot_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With members loaded lazily, Synapse marks a sender's device list as changed in each
    # batch that carries their messages (synapse#6162): crypto store reads (and, for a
    # person the bot encrypts for, a key query) with every message, for nothing.
    async with person(synapse.url, synapse.account("erin")) as erin, matrix() as served:
        crypto = channel_of(served).crypto
        assert crypto is not None
        changed: list[list[str]] = []
        handle = crypto.machine.handle_device_lists

        async def spy(lists: Any) -> None:
            changed.append(list(lists.changed))
            await handle(lists)

        monkeypatch.setattr(crypto.machine, "handle_device_lists", spy)
        # Two rooms with the bot, written in turn: Synapse remembers one member event a
        # person for the lazy loading, so each room's batch sends theirs again.
        rooms = [await erin.room_with(bot_id), await erin.room_with(bot_id)]
        for room in rooms:
            first = await erin.send(room, "/echo one")
            await erin.shows(room, first, bot_id, "one")
        changed.clear()
        for text in ("two", "three", "four"):
            for room in rooms:
                sent = await erin.send(room, f"/echo {text}")
                await erin.shows(room, sent, bot_id, text)
        assert changed == []


async def test_under_cross_signed_trust_only_a_cross_signed_device_gets_keys_and_is_run(
    matrix: Start, synapse: Synapse, bot_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    # One person, two sessions: the first sets up cross-signing and signs itself (what a
    # client does at its first login), the second is a new login nobody verified. The
    # account is this test's alone: its cross-signing keys stay on the homeserver.
    caplog.set_level(logging.WARNING, "slashgate.matrix")
    runtime = Scripted(Command(name="work", description="Work"))
    account = synapse.account("dora")
    async with (
        person(synapse.url, account, encrypted=True) as signed,
        person(synapse.url, account, encrypted=True) as unsigned,
    ):
        assert signed.crypto is not None and unsigned.crypto is not None
        await signed.crypto.machine.generate_recovery_key()
        async with matrix(runtime, matrix_trust="cross_signed"):
            room = await signed.room_with(bot_id, initial_state=[ENCRYPTION])

            # The cross-signed session is answered, and only it can read the answer.
            asked = await signed.send(room, "/work")
            (await runtime.next_turn()).emit(MessageDelta("done"), MessageEnd())
            await signed.shows(room, asked, bot_id, "done")

            def withheld() -> list[dict[str, Any]]:
                return [e for e in unsigned.to_device if e["type"] == "m.room_key.withheld"]

            await unsigned.until(lambda: withheld() or unsigned.replies(room, asked, bot_id))
            assert unsigned.replies(room, asked, bot_id) == []  # it could not read the answer
            [told] = withheld()
            assert told["content"]["room_id"] == room and told["content"]["code"] == "m.unverified"
            session = told["content"]["session_id"]
            store = unsigned.crypto.machine.crypto_store
            assert await store.get_group_session(RoomID(room), SessionID(session)) is None

            # The other session is not run: one notice, which the verified session reads.
            refused = await unsigned.send(room, "/work")
            answered = await signed.until(
                lambda: (
                    not runtime.turns.empty()  # a turn: fail now, not at the timeout
                    or signed.replies(room, refused, bot_id)
                )
            )
            assert runtime.turns.empty(), "the unverified session's message was run"
            [notice] = answered
            assert notice["content"]["body"] == UNTRUSTED
            device, _ = unsigned.crypto.device
            [line] = [r.getMessage() for r in caplog.records if refused in r.getMessage()]
            assert f"device {device}, trust unverified: matrix_trust asks for" in line


async def test_a_pickle_key_that_does_not_open_the_store_says_so(
    synapse: Synapse, tmp_path: Path
) -> None:
    account = synapse.account("carol")
    store = tmp_path / "crypto.sqlite3"
    async with aiohttp.ClientSession() as session:

        def client() -> Client:
            api = HTTPAPI(synapse.url, account.token, client_session=session)
            return Client(UserID(account.user_id), DeviceID(account.device_id), api=api)

        await (await Crypto.open(client(), store, "the key")).close()
        with pytest.raises(ValueError, match="cannot be opened with this matrix_pickle_key"):
            await Crypto.open(client(), store, "another key")
        assert (store.stat().st_mode & 0o777) == 0o600
