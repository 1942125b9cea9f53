"""A burst of plain messages in one direct-message chat runs, and is answered, in the order it
was sent: through slack-bolt, on the SQLite store with the busy policy queue.
"""

from __future__ import annotations

from pathlib import Path

from tests.http import burst
from tests.probe import Probe
from tests.slack.slack_fake import WAIT, direct_message, event_body, fake_slack, signed_headers
from tests.slack.slack_harness import shown, slack_gateway

BURST = 20


async def test_a_burst_in_one_chat_runs_and_is_answered_in_send_order(
    gateway_server, tmp_path: Path
) -> None:
    probe = Probe()
    sent = [f"message {i}" for i in range(BURST)]
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    runtime = probe.runtime()
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, runtime, max_queue=BURST, **state) as h,
    ):
        events = [direct_message(t, channel="D5", ts=f"500.{i:03d}") for i, t in enumerate(sent)]
        bodies = [event_body(event) for event in events]
        requests = [(signed_headers(b, "application/json"), b.encode()) for b in bodies]
        acks = await burst(h.server.url, "/slack/events", requests)
        await h.channel.drain(WAIT)
    assert [ack.split(b" ")[1] for ack in acks] == [b"200"] * BURST
    assert probe.seen == sent
    replies = fake.messages("D5")
    assert [reply.thread_ts for reply in replies] == [event["ts"] for event in events]
    assert all(shown(reply, f"got: {text}") for reply, text in zip(replies, sent, strict=True))
