"""The SQLite state file keeps at most ``sqlite_state_size`` keys (issue 21, defect 11): a key
per conversation (its remembered commands, its runtime session) no longer piles up forever
under a steady stream of new conversations; the least recently used go first.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gateway.core import Gateway
from gateway.inbound import InboundMessage
from gateway.runtimes.embedded.demo import MAX_REMEMBERED, QUICKSTART
from gateway.state import SqliteStore
from gateway.state.sqlite import _PRUNE_EVERY
from slashgate.config import Settings
from slashgate.registry import build_runtime

BOUND = 20
WRITES = 3 * _PRUNE_EVERY  # enough for the sweeps to run


def keys_in(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM state").fetchone()[0])


async def test_the_state_file_keeps_its_bound_of_keys_the_least_recently_used_go(tmp_path: Path):
    path = tmp_path / "state.sqlite3"
    store = SqliteStore(path, max_keys=BOUND)
    await store.open()
    try:
        await store.set("read-often", 1)
        for n in range(WRITES):
            await store.set(f"conversation-{n}", {"n": n})
            if n % 50 == 0:
                assert await store.get("read-often") == 1  # a read counts as a use
        assert keys_in(path) <= BOUND + _PRUNE_EVERY
        assert await store.get("read-often") == 1
        assert await store.get(f"conversation-{WRITES - 1}") == {"n": WRITES - 1}
        assert await store.get("conversation-0") is None
    finally:
        await store.close()


async def test_remembered_commands_of_many_conversations_stay_within_the_bound(tmp_path: Path):
    path = tmp_path / "state.sqlite3"
    settings = Settings(
        state_path=path, sqlite_state_size=BOUND, max_sessions=1, log_level="WARNING"
    )
    gateway = Gateway(settings, build_runtime(settings))
    await gateway.start()
    try:
        for n in range(WRITES):
            message = InboundMessage("webhook", f"c{n}", "u", f"/remember hi hello {n}")
            assert (await gateway.handle(message)).reply is not None
        assert keys_in(path) <= BOUND + _PRUNE_EVERY
        # The last conversation's command comes back from the store (its session was closed,
        # max_sessions = 1); the first conversation's was forgotten.
        last = await gateway.handle(InboundMessage("webhook", f"c{WRITES - 1}", "u", "/hi"))
        assert last.reply is not None and last.reply.text == f"hello {WRITES - 1}"
        first = await gateway.handle(InboundMessage("webhook", "c0", "u", "/hi"))
        assert first.reply is not None and first.reply.category == "unsupported"
    finally:
        await gateway.stop()


async def test_one_conversation_remembers_a_bounded_number_of_commands(tmp_path: Path):
    settings = Settings(store="memory", log_level="WARNING")
    gateway = Gateway(settings, build_runtime(settings))
    await gateway.start()
    try:

        async def say(text: str) -> str:
            reply = (await gateway.handle(InboundMessage("webhook", "c", "u", text))).reply
            assert reply is not None
            return reply.text

        for n in range(MAX_REMEMBERED):
            assert await say(f"/remember r{n} text {n}") == f"Remembered /r{n}."
        refused = await say("/remember one-more text")
        assert f"at most {MAX_REMEMBERED} remembered commands" in refused
        assert "Remembered" in await say("/remember r0 new text")  # replacing one is fine
        assert await say("/r0") == "new text"
        assert await say("/forget r1") == "Forgot /r1."
        assert await say("/remember one-more text") == "Remembered /one-more."
    finally:
        await gateway.stop()


def test_the_bound_of_remembered_commands_is_said_where_remember_is_described() -> None:
    """No page said that the demo keeps at most 50 remembered commands per conversation."""
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    assert f"registers the dynamic command `/<name>` (at most {MAX_REMEMBERED} per" in readme
    assert f"at most {MAX_REMEMBERED} remembered commands: /forget one first" in readme
    assert f"(at most {MAX_REMEMBERED} in a conversation)" in " ".join(QUICKSTART.split())
