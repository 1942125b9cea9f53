"""Every case of the parity corpus through Matrix, next to the webhook in the same run: as
direct messages and as mentions in a room of several people, in rooms without encryption and
in encrypted ones. Each case must be classified and forwarded as the webhook does, give the
user the same text (the Markdown as the notice's body), and an input for another bot must get
no answer at all.

The cases are played concurrently over a few rooms, one after another within each room (a
second command while the first runs would be ``busy``, as on every channel).
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from mautrix.types import RoomCreatePreset, UserID

from channels.activity import reply_text
from tests.conftest import load_parity, parity_runtime
from tests.parity_check import same_as_webhook

from .conftest import Outcomes, Start
from .person import ENCRYPTION, person
from .synapse import Synapse

pytestmark = pytest.mark.xdist_group("matrix")

HEADER, CASES = load_parity()
ROOMS = 4  # of each kind


async def webhook(
    http: aiohttp.ClientSession, served: Any, text: str, index: int
) -> dict[str, Any]:
    body = {"conversation": f"parity-{index}", "user": "U1", "text": text}
    async with http.post(f"{served.url}/v1/messages", json=body) as resp:
        assert resp.status == 200
        answer: dict[str, Any] = await resp.json()
        return answer


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
async def test_the_parity_corpus_as_direct_messages_and_mentions(
    matrix: Start,
    synapse: Synapse,
    bot_id: str,
    monkeypatch: pytest.MonkeyPatch,
    encrypted: bool,
) -> None:
    # Encrypted: every room is, and alice writes from a device with keys (bob has none: he
    # only makes the room one of several people).
    initial_state = [ENCRYPTION] if encrypted else []
    async with (
        person(synapse.url, synapse.account("alice"), encrypted=encrypted) as alice,
        person(synapse.url, synapse.account("bob")) as bob,
        matrix(parity_runtime(), interactive_only=HEADER["interactive_only"]) as served,
        aiohttp.ClientSession() as http,
    ):
        outcomes = Outcomes(served.gateway, monkeypatch)

        async def group() -> str:
            invitees = [UserID(bot_id), UserID(bob.me)]
            room = str(
                await alice.client.create_room(
                    preset=RoomCreatePreset.PRIVATE,
                    invitees=invitees,
                    initial_state=initial_state,
                )
            )
            await bob.join(room)
            await alice.until(lambda: alice.joined(room, bot_id) and alice.joined(room, bob.me))
            return room

        direct = await asyncio.gather(
            *(alice.room_with(bot_id, initial_state=initial_state) for _ in range(ROOMS))
        )
        groups = await asyncio.gather(*(group() for _ in range(ROOMS)))
        silent: list[tuple[str, str]] = []  # (room, event) of inputs for another bot
        played: list[str] = []

        async def play(room: str, mention: bool, cases: list[tuple[int, dict[str, Any]]]) -> None:
            extra = {"m.mentions": {"user_ids": [bot_id]}} if mention else {}
            for index, case in cases:
                web = await webhook(http, served, case["text"], index)
                asked = await alice.send(room, case["text"], **extra)
                message, outcome = await outcomes.of(asked)
                assert message.direct is not mention
                if outcome.classification.for_other_bot:
                    assert outcome.reply is None and outcome.forwarded is None
                    silent.append((room, asked))
                    continue
                same_as_webhook([(message, outcome)], web, case)
                assert outcome.reply is not None
                expected = web["reply"]["text"]
                if mention and outcome.classification.command == "help":
                    # In a room of several people /new is the owners' (docs/access.md):
                    # /help lists what the sender may run there.
                    expected = "\n".join(
                        line for line in expected.split("\n") if not line.startswith("- `/new`")
                    )
                assert outcome.reply.text == expected
                assert outcome.reply.category == web["reply"]["category"]
                await alice.shows(room, asked, bot_id, reply_text(outcome.reply))
                played.append(case["text"])

        numbered = list(enumerate(CASES))
        await asyncio.gather(
            *(play(room, False, numbered[i::ROOMS]) for i, room in enumerate(direct)),
            *(play(room, True, numbered[i::ROOMS]) for i, room in enumerate(groups)),
        )
        assert len(played) + len(silent) == 2 * len(CASES)
        assert silent  # the corpus has inputs for another bot: they got no answer
        for room, asked in silent:
            assert alice.replies(room, asked, bot_id) == []
        if encrypted:  # what the bot wrote there came encrypted (a redaction has no content)
            for room in (*direct, *groups):
                sent = [
                    e
                    for e in alice.timeline(room, bot_id)
                    if "state_key" not in e and e["type"] != "m.room.redaction"
                ]
                assert sent and all(e["event_id"] in alice.sealed for e in sent)
