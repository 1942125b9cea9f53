"""A burst of plain messages in one direct-message channel runs, and is answered, in the order
it was sent: dispatched over the Gateway to hikari's GatewayBot, on the SQLite store with the
busy policy queue.
"""

from __future__ import annotations

from pathlib import Path

from tests.probe import Probe

from .plain_harness import DM, message_create, plain_gateway

BURST = 20


async def test_a_burst_in_one_channel_runs_and_is_answered_in_send_order(
    gateway_server, tmp_path: Path
) -> None:
    probe = Probe()
    sent = [f"message {i}" for i in range(BURST)]
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with plain_gateway(gateway_server, probe.runtime(), max_queue=BURST, **state) as p:
        messages = [message_create(text) for text in sent]
        for data in messages:
            await p.send(data)
        for data in messages:
            assert await p.was_taken(data["id"])
        replies = await p.answered(messages[-1])
    assert probe.seen == sent
    assert [reply.content for reply in replies] == [f"got: {text}" for text in sent]
    posts = p.h.fake.writes("POST", f"/channels/{DM}/messages")
    references = [post.body["message_reference"]["message_id"] for post in posts]
    assert references == [data["id"] for data in messages]  # each a reply to its message
