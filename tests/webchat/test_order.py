"""A burst of messages in one web chat conversation runs, and is answered, in the order it was
sent: each sent as the page sends it (POST /v1/messages, its reply as server-sent events), on
the SQLite store with the busy policy queue. The page's wire, without a browser: a browser
keeps at most six connections to one host, so it never sends twenty at once.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ServerFactory
from tests.http import burst
from tests.probe import Probe

BURST = 20
PAGE = {"Content-Type": "application/json", "Accept": "text/event-stream"}


async def test_a_burst_in_one_conversation_runs_and_is_answered_in_send_order(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    probe = Probe()
    sent = [f"message {i}" for i in range(BURST)]
    requests = [
        (PAGE, json.dumps({"conversation": "chat-1", "user": "me", "text": text}).encode())
        for text in sent
    ]
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with gateway_server(probe.runtime(), max_queue=BURST, **state) as server:
        answers = await burst(server.url, "/v1/messages", requests)
    assert probe.seen == sent
    # Each stream's reply event (one chunk of its own), in the order the streams ended.
    replies = [json.loads(a.split(b"event: reply\ndata: ")[1].split(b"\n")[0]) for a in answers]
    assert [r["reply"]["text"] for r in replies] == [f"got: {text}" for text in sent]
