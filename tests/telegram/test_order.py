"""A burst of plain messages in one chat runs, and is answered, in the order it was sent: on
the SQLite store, whose reads and writes pass through a thread, with the busy policy queue.
"""

from __future__ import annotations

from pathlib import Path

from tests.probe import Probe

from .fake_bot_api import FakeBotAPI
from .helpers import PRIVATE, Start, message_update

BURST = 20


async def test_a_burst_in_one_chat_runs_and_is_answered_in_send_order(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    probe = Probe()
    sent = [f"message {i}" for i in range(BURST)]
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with telegram(
        probe.runtime(), telegram_mode="polling", telegram_secret=None, max_queue=BURST, **state
    ):
        # One getUpdates answer holds them all, as after a pause in polling.
        await fake.push_update(*(message_update(PRIVATE, text) for text in sent))
        await fake.wait(lambda: len(fake.texts(PRIVATE)) == BURST)
    assert probe.seen == sent
    assert fake.texts(PRIVATE) == [f"got: {text}" for text in sent]
