"""What a person does beside writing: answer a permission request (by reaction or by number,
and only the person asked), stop a turn with /cancel, send a file.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mautrix.types import RoomCreatePreset, UserID

from channels.matrix.permissions import KEYCAPS
from contract import Command
from gateway.events import MessageDelta, MessageEnd, PermissionOption, PermissionRequired
from tests.telegram.helpers import Scripted

from .conftest import Start
from .person import WAIT, Person, person, relates
from .synapse import Synapse

pytestmark = pytest.mark.xdist_group("matrix")

OPTIONS = (PermissionOption("allow", "Allow once"), PermissionOption("deny", "Reject"))
MENTION = "m.mentions"


async def test_only_the_person_asked_answers_a_permission_request(
    matrix: Start, alice: Person, synapse: Synapse, bot_id: str
) -> None:
    runtime = Scripted(Command(name="clean", description="Clean"))
    async with person(synapse.url, synapse.account("bob")) as bob, matrix(runtime):
        invitees = [UserID(bot_id), UserID(bob.me)]
        room = str(
            await alice.client.create_room(preset=RoomCreatePreset.PRIVATE, invitees=invitees)
        )
        await bob.join(room)
        await alice.until(lambda: alice.joined(room, bot_id) and alice.joined(room, bob.me))
        asked = await alice.send(room, "/clean", **{MENTION: {"user_ids": [bot_id]}})
        turn = await runtime.next_turn()

        async def prompt_for(request_id: str, title: str) -> dict[str, Any]:
            turn.emit(PermissionRequired(request_id, title, OPTIONS))
            prompt: dict[str, Any] = await alice.until(
                lambda: [
                    r for r in alice.replies(room, asked, bot_id) if title in r["content"]["body"]
                ]
            )
            return prompt[0]

        first = await prompt_for("r1", "Delete build/?")
        assert "1. Allow once" in first["content"]["body"]
        keys = await alice.until(
            lambda: (
                (
                    found := [
                        relates(e)["key"]
                        for e in alice.timeline(room, bot_id)
                        if e["type"] == "m.reaction"
                        and relates(e).get("event_id") == first["event_id"]
                    ]
                )
                and len(found) == 2
                and found
            )
        )
        assert keys == list(KEYCAPS[:2])
        # Bob's tap is no answer; Alice's number is.
        await bob.send_raw(
            room,
            "m.reaction",
            {
                "m.relates_to": {
                    "rel_type": "m.annotation",
                    "event_id": first["event_id"],
                    "key": KEYCAPS[0],
                }
            },
        )
        await bob.send(room, "1")
        await alice.send(room, "2")
        assert await asyncio.wait_for(turn.answer("r1"), WAIT) == "deny"
        await alice.until(
            lambda: alice.shown(room, first["event_id"]).get("body", "").endswith("→ Reject")
        )

        # A reaction answers too.
        second = await prompt_for("r2", "Push to main?")
        await alice.send_raw(
            room,
            "m.reaction",
            {
                "m.relates_to": {
                    "rel_type": "m.annotation",
                    "event_id": second["event_id"],
                    "key": KEYCAPS[0],
                }
            },
        )
        assert await asyncio.wait_for(turn.answer("r2"), WAIT) == "allow"
        turn.emit(MessageDelta("cleaned"), MessageEnd())
        await alice.until(
            lambda: any(
                alice.shown(room, r["event_id"]).get("body") == "cleaned"
                for r in alice.replies(room, asked, bot_id)
            )
        )


async def test_cancel_stops_the_running_turn(matrix: Start, alice: Person, bot_id: str) -> None:
    async with matrix():
        room = await alice.room_with(bot_id)
        slow = await alice.send(room, "/slow 30")
        await alice.reply(room, slow, bot_id)  # it streams: it is running
        cancel = await alice.send(room, "/cancel")
        await alice.shows(room, cancel, bot_id, "Cancelled the running turn.")
        after = await alice.send(room, "/echo free again")  # the conversation is free
        await alice.shows(room, after, bot_id, "free again")
        [reply] = alice.replies(room, slow, bot_id)
        assert "done" not in alice.shown(room, reply["event_id"])["body"]


async def test_a_file_reaches_the_runtime_within_the_limits(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    async with matrix(attachment_max_bytes=1000):
        room = await alice.room_with(bot_id)
        small = await alice.send_file(room, "notes.txt", b"hello from a file")
        await alice.shows(room, small, bot_id, "You sent notes.txt (text/plain, 17 bytes).")
        big = await alice.send_file(room, "big.txt", b"x" * 5000)
        refused = await alice.reply(room, big, bot_id)
        assert "over the limit" in alice.shown(room, refused["event_id"])["body"]
        # A file whose address is no mxc:// URL (a client's bug, or a lure to a host of the
        # sender's choosing) is said to be unreadable, not dropped without a word.
        elsewhere = {"msgtype": "m.file", "body": "x.txt", "url": "http://127.0.0.1:9/x.txt"}
        odd = await alice.send_raw(room, "m.room.message", elsewhere)
        told = await alice.reply(room, odd, bot_id)
        assert "x.txt could not be downloaded" in alice.shown(room, told["event_id"])["body"]
        assert "not an mxc:// URL" in alice.shown(room, told["event_id"])["body"]
