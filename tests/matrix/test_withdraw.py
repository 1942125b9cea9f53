"""A queued message its sender takes back before its turn: deleted (redacted), it never runs
and gets no reply, its ⏳ taken off; edited, the edited text runs in its place (an encrypted
edit too) and the first text never does. A redaction by anyone else, or of a message already
answered, changes nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from mautrix.types import EventID, RoomID

from contract import Command
from gateway.events import MessageDelta, MessageEnd
from tests.telegram.helpers import Scripted, ScriptedTurn

from .conftest import Start
from .person import ENCRYPTION, Person, person
from .synapse import Synapse
from .test_restart import reactions, redacted
from .test_rooms import group_room

pytestmark = pytest.mark.xdist_group("matrix")

TO_BOT = "m.mentions"  # what addresses the bot in a room of several people


def working() -> Scripted:
    """A runtime whose turns the test answers; ``/work`` runs until it does."""
    return Scripted(Command(name="work", description="Work"))


def source(turn: ScriptedTurn) -> str:
    """The text the runtime got."""
    return str(turn.turn.message.payload.source)


async def next_says(runtime: Scripted, text: str, reply: str) -> ScriptedTurn:
    """The runtime's next turn, which must be ``text``: answered ``reply``."""
    turn = await runtime.next_turn()
    assert source(turn) == text
    turn.emit(MessageDelta(reply), MessageEnd())
    return turn


@pytest.fixture
async def bob(synapse: Synapse) -> Any:
    async with person(synapse.url, synapse.account("bob")) as who:
        yield who


async def test_a_queued_message_its_sender_deletes_never_runs(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    runtime = working()
    async with matrix(runtime):
        room = await alice.room_with(bot_id)
        await alice.send(room, "/work")
        running = await runtime.next_turn()
        deleted = await alice.send(room, "never mind this")
        kept = await alice.send(room, "but this")
        [hourglass] = await alice.until(lambda: reactions(alice, room, deleted, bot_id))
        await alice.client.redact(RoomID(room), EventID(deleted))
        await alice.until(lambda: redacted(alice, room, hourglass, bot_id))  # its ⏳ went

        running.emit(MessageEnd())
        await next_says(runtime, "but this", "ok")  # the runtime never saw the deleted one
        await alice.shows(room, kept, bot_id, "ok")
        assert alice.replies(room, deleted, bot_id) == []


async def test_an_edited_queued_message_runs_with_its_new_text_only(
    matrix: Start, synapse: Synapse, bot_id: str
) -> None:
    runtime = working()
    async with person(synapse.url, synapse.account("alice"), encrypted=True) as alice:
        async with matrix(runtime):
            room = await alice.room_with(bot_id, initial_state=[ENCRYPTION])
            await alice.send(room, "/work")
            running = await runtime.next_turn()
            first = await alice.send(room, "the first words")
            [hourglass] = await alice.until(lambda: reactions(alice, room, first, bot_id))
            new = {"msgtype": "m.text", "body": "the second words"}
            replaces = {"rel_type": "m.replace", "event_id": first}
            edit = await alice.send(
                room, "* the second words", **{"m.new_content": new, "m.relates_to": replaces}
            )
            await alice.until(lambda: edit in alice.sealed)  # the edit went encrypted
            await alice.until(lambda: redacted(alice, room, hourglass, bot_id))
            # The edited text waits in its place: a ⏳ on the message again.
            await alice.until(lambda: len(reactions(alice, room, first, bot_id)) == 2)

            running.emit(MessageEnd())
            await next_says(runtime, "the second words", "edited")
            await alice.shows(room, first, bot_id, "edited")  # the reply answers the message
            after = await alice.send(room, "and last")
            await next_says(runtime, "and last", "done")  # the first words never ran
            await alice.shows(room, after, bot_id, "done")
            assert len(alice.replies(room, first, bot_id)) == 1


async def test_only_the_senders_redaction_or_edit_of_a_queued_message_counts(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    runtime = working()
    to_bot = {TO_BOT: {"user_ids": [bot_id]}}
    async with matrix(runtime):
        room = await group_room(alice, bob, bot=bot_id)  # alice is its admin
        hello = await bob.send(room, "hello", **to_bot)
        await next_says(runtime, "hello", "hi")
        answer = await alice.shows(room, hello, bot_id, "hi")
        await bob.send(room, "/work", **to_bot)
        running = await runtime.next_turn()
        queued = await bob.send(room, "queued one", **to_bot)
        taken_back = await bob.send(room, "queued two", **to_bot)
        await alice.until(lambda: reactions(alice, room, taken_back, bot_id))
        await alice.client.redact(RoomID(room), EventID(queued))  # a moderator's: not bob's word
        # Someone else's "edit" of it (a client shows none; anyone may send one) changes nothing.
        forged = {"msgtype": "m.text", "body": "forged words"}
        replaces = {"rel_type": "m.replace", "event_id": queued}
        await alice.send(
            room, "* forged words", **{"m.new_content": forged, "m.relates_to": replaces}
        )
        await bob.client.redact(RoomID(room), EventID(hello))  # answered already
        await bob.client.redact(RoomID(room), EventID(taken_back))
        [hourglass] = reactions(alice, room, taken_back, bot_id)
        await alice.until(lambda: redacted(alice, room, hourglass, bot_id))

        running.emit(MessageEnd())
        await next_says(runtime, "queued one", "still runs")
        await alice.shows(room, queued, bot_id, "still runs")
        last = await bob.send(room, "last", **to_bot)
        await next_says(runtime, "last", "done")
        await alice.shows(room, last, bot_id, "done")
        assert alice.replies(room, taken_back, bot_id) == []
        assert alice.replies(room, hello, bot_id) == [answer]  # nothing more, nothing taken off
        assert not redacted(alice, room, answer["event_id"], bot_id)
