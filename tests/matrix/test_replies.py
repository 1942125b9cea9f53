"""How a reply appears: typing while the agent works, a notice edited as the text streams, a
long reply in several notices each under the event size limit, a reaction on queued input
(taken off when its turn ends), and the agent's tools as one notice of their own.
"""

from __future__ import annotations

import json
import re

import pytest

from channels.matrix.render import MAX_EVENT
from contract import Command
from gateway.events import MessageDelta, MessageEnd, ToolEnd, ToolStart
from tests.telegram.helpers import Scripted

from .conftest import Start
from .person import Person, relates

pytestmark = pytest.mark.xdist_group("matrix")


async def test_a_reply_streams_by_edits_and_queued_input_shows_a_reaction(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    runtime = Scripted(Command(name="work", description="Work"))
    async with matrix(runtime):
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/work")
        turn = await runtime.next_turn()
        await alice.until(lambda: bot_id in alice.typing.get(room, ()))

        turn.emit(MessageDelta("First part"))
        notice = await alice.reply(room, asked, bot_id)
        turn.emit(ToolStart("t1", "Read file", "read"))
        assert notice["content"]["msgtype"] == "m.notice"
        queued = await alice.send(room, "and then this")
        reaction = await alice.until(
            lambda: [
                e
                for e in alice.timeline(room, bot_id)
                if e["type"] == "m.reaction" and relates(e).get("event_id") == queued
            ]
        )
        assert relates(reaction[0])["key"] == "⏳"

        turn.emit(MessageDelta(", second part."))
        await alice.until(
            lambda: alice.shown(room, notice["event_id"]).get("body") == "First part, second part."
        )
        turn.emit(ToolEnd("t1", "completed"), MessageEnd())
        assert alice.edits(room, notice["event_id"])  # it grew by an edit, not a new message
        # The tools went to a notice of their own, not into the reply.
        tools = [
            e for e in alice.replies(room, asked, bot_id) if "Read file" in e["content"]["body"]
        ]
        assert tools and tools[0]["event_id"] != notice["event_id"]

        # The queued input's turn: its reaction goes when it ends.
        second = await runtime.next_turn()
        second.emit(MessageDelta("ok"), MessageEnd())
        await alice.shows(room, queued, bot_id, "ok")
        await alice.until(
            lambda: any(
                e["type"] == "m.room.redaction" and e.get("redacts") == reaction[0]["event_id"]
                for e in alice.timeline(room, bot_id)
            )
        )


async def test_a_long_reply_is_split_below_the_event_size_limit(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    runtime = Scripted(Command(name="essay", description="Write a lot"))
    text = " ".join(f"word{i} & <more>" for i in range(2_500))  # HTML escaping grows it
    async with matrix(runtime):
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/essay")
        turn = await runtime.next_turn()
        turn.emit(MessageDelta(text), MessageEnd())
        await alice.reply(room, asked, bot_id)

        def notices() -> list[str]:
            return [
                str(alice.shown(room, e["event_id"]).get("body"))
                for e in alice.timeline(room, bot_id)
                if e["type"] == "m.room.message" and relates(e).get("rel_type") != "m.replace"
            ]

        await alice.until(lambda: " ".join(notices()).split() == text.split())
        assert len(notices()) >= 2
        for event in alice.timeline(room, bot_id):
            assert len(json.dumps(event).encode()) < MAX_EVENT


def seen_lines(formatted: str) -> list[str]:
    """The lines a client shows for ``formatted``: HTML folds a bare newline into a space."""
    broken = re.sub(r"<br\s*/?>|</p>|</li>", "\n", formatted.replace("\n", " "))
    return [line.strip() for line in re.sub(r"<[^>]+>", "", broken).split("\n") if line.strip()]


async def test_the_lines_of_a_reply_stay_lines_in_its_formatted_body(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    # The demo's /slow 2 answers three lines; Telegram, Slack and Discord show three lines.
    async with matrix():
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/slow 2")
        reply = await alice.shows(room, asked, bot_id, "1/2\n2/2\ndone")
        formatted = alice.shown(room, reply["event_id"])["formatted_body"]
        assert seen_lines(formatted) == ["1/2", "2/2", "done"]
