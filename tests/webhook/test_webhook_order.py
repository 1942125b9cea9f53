"""A burst of plain messages in one conversation over the HTTP API runs, and is answered, in
the order it was sent: journaled (an Idempotency-Key each) on the SQLite store, whose writes
pass through a thread, with the busy policy queue.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ServerFactory
from tests.http import burst
from tests.probe import Probe

BURST = 20


async def test_a_burst_in_one_conversation_runs_and_is_answered_in_send_order(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    probe = Probe()
    sent = [f"message {i}" for i in range(BURST)]
    requests = [
        (
            {"Content-Type": "application/json", "Idempotency-Key": f"key-{i}"},
            json.dumps({"conversation": "c1", "user": "u1", "text": text}).encode(),
        )
        for i, text in enumerate(sent)
    ]
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with gateway_server(probe.runtime(), max_queue=BURST, **state) as server:
        answers = await burst(server.url, "/v1/messages", requests)
    assert probe.seen == sent
    replies = [json.loads(a.partition(b"\r\n\r\n")[2])["reply"]["text"] for a in answers]
    assert replies == [f"got: {text}" for text in sent]
