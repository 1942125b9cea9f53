"""What a number does while a permission prompt waits: said to someone else in a room of
several people it answers nothing; one the prompt has no option for gets a word on what
does; only ASCII digits are numbers (any other text is a message like others).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from contract import Command
from gateway.events import MessageDelta, MessageEnd, PermissionOption, PermissionRequired
from tests.telegram.helpers import Scripted, ScriptedTurn

from .conftest import Start
from .person import WAIT, Person
from .test_rooms import bob, group_room

pytestmark = pytest.mark.xdist_group("matrix")
__all__ = ["bob"]

OPTIONS = (PermissionOption("allow", "Allow once"), PermissionOption("deny", "Reject"))
MENTION = "m.mentions"


async def prompted(
    runtime: Scripted, alice: Person, room: str, bot_id: str, **content: Any
) -> tuple[ScriptedTurn, str]:
    """A turn that asked Alice's permission in ``room``, and the prompt's event id."""
    asked = await alice.send(room, "/clean", **content)
    turn = await runtime.next_turn()
    turn.emit(PermissionRequired("r1", "Delete build/?", OPTIONS))
    [prompt] = await alice.until(
        lambda: [r for r in alice.replies(room, asked, bot_id) if "Delete" in str(r)]
    )
    return turn, str(prompt["event_id"])


async def test_a_number_said_to_someone_else_in_a_group_answers_no_prompt(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    runtime = Scripted(Command(name="clean", description="Clean"))
    async with matrix(runtime):
        room = await group_room(alice, bob, bot=bot_id)
        turn, prompt = await prompted(
            runtime, alice, room, bot_id, **{MENTION: {"user_ids": [bot_id]}}
        )
        question = await bob.send(room, "Alice, how many of you are coming tonight?")
        # Alice's "1" as a reply to Bob, then one that mentions only Bob: both for Bob.
        await alice.send(
            room,
            "1",
            **{
                MENTION: {"user_ids": [bob.me]},
                "m.relates_to": {"m.in_reply_to": {"event_id": question}},
            },
        )
        await alice.send(room, "1", **{MENTION: {"user_ids": [bob.me]}})
        # A reply to the prompt itself, as Element writes one (the bot mentioned), answers.
        await alice.send(
            room,
            "2",
            **{
                MENTION: {"user_ids": [bot_id]},
                "m.relates_to": {"m.in_reply_to": {"event_id": prompt}},
            },
        )
        assert await asyncio.wait_for(turn.answer("r1"), WAIT) == "deny"
        turn.emit(MessageDelta("kept"), MessageEnd())
        await alice.until(lambda: alice.shown(room, prompt).get("body", "").endswith("→ Reject"))


async def test_a_number_the_prompt_has_no_option_for_gets_a_word(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    runtime = Scripted(Command(name="clean", description="Clean"))
    async with matrix(runtime):
        room = await alice.room_with(bot_id)
        turn, prompt = await prompted(runtime, alice, room, bot_id)
        for number in ("3", "0"):
            said = await alice.send(room, number)
            told = await alice.reply(room, said, bot_id)
            body = alice.shown(room, told["event_id"])["body"]
            assert body == "Answer the permission request with a number from 1 to 2.", body
        await alice.send(room, "1")
        assert await asyncio.wait_for(turn.answer("r1"), WAIT) == "allow"
        turn.emit(MessageDelta("done"), MessageEnd())
        await alice.until(
            lambda: alice.shown(room, prompt).get("body", "").endswith("→ Allow once")
        )


async def test_a_digit_other_than_ascii_is_a_message_while_a_prompt_waits(
    matrix: Start, alice: Person, bot_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    runtime = Scripted(Command(name="clean", description="Clean"))
    async with matrix(runtime):
        room = await alice.room_with(bot_id)
        turn, _ = await prompted(runtime, alice, room, bot_id)
        # Digits to str.isdigit(), not to int(): a follow-up for the agent, queued (⏳).
        odd = [await alice.send(room, text) for text in ("²", "①")]
        await alice.send(room, "2")
        assert await asyncio.wait_for(turn.answer("r1"), WAIT) == "deny"
        turn.emit(MessageEnd())
        for event in odd:
            follow_up = await runtime.next_turn()
            follow_up.emit(MessageDelta("read"), MessageEnd())
            await alice.shows(room, event, bot_id, "read")
    assert "failed" not in caplog.text
