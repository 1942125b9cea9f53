"""SQLite's group commit: inputs that arrive together share a transaction (and its fsync), yet
each is committed when its await returns; the journal's later marks never make the event
loop wait, and never overtake what the store's thread still has to do.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.state import Entry, SqliteStore
from tests.http import ROOT


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    opened = SqliteStore(tmp_path / "state.sqlite3")
    await opened.open()
    try:
        yield opened
    finally:
        await opened.close()


def entry(n: int) -> Entry:
    return Entry(id=f"e{n}", conversation=f"c{n % 4}", channel="t", body={"n": n})


async def test_inputs_that_arrive_together_share_commits(store: SqliteStore):
    commits: list[str] = []
    assert store._db is not None  # the thread's connection: every durable commit is its
    store._db.set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    added = await asyncio.gather(*(store.append(entry(n), f"claim:{n}", 60) for n in range(64)))
    assert all(added) and len({e.seq for e in added if e}) == 64
    assert len(commits) <= 8, len(commits)  # 64 inputs, a few transactions
    assert [e.id for e in await store.pending()] == [f"e{n}" for n in range(64)]


async def test_a_mark_waits_for_what_the_thread_has_yet_to_do(store: SqliteStore):
    # An insert queued for the thread, then an update of that row at once: written at once on
    # the loop, it would find no row, and the insert would win.
    inserted = store.writer.submit(
        lambda db: db.execute("INSERT INTO state (key, value) VALUES ('k', '1')")
    )
    await store.writer.write("UPDATE state SET value = '2' WHERE key = ?", ("k",))
    await inserted
    assert await store.get("k") == 2


async def test_a_mark_never_makes_the_loop_wait_for_another_process(tmp_path: Path):
    store = SqliteStore(tmp_path / "state.sqlite3")
    await store.open()
    added = await store.append(entry(1), None, 60)
    assert added is not None
    other = sqlite3.connect(tmp_path / "state.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writes: the file is locked
    added.state = "running"
    marked = asyncio.ensure_future(store.update(added))
    await asyncio.sleep(0.2)  # the loop goes on meanwhile (the loop watchdog fails a blocked one)
    assert not marked.done()
    other.execute("COMMIT")
    other.close()
    assert await marked
    assert [e.state for e in await store.pending()] == ["running"]
    await store.close()


async def test_a_finished_entry_is_gone_for_every_later_operation(store: SqliteStore):
    added = await asyncio.gather(*(store.append(entry(n), None, 60) for n in range(8)))
    for one in added:
        assert one is not None
        one.state = "answered"
        await store.update(one)
        await store.finish(one)  # nobody waits for its write: later reads see it all the same
    assert await store.pending() == []


# Appends and marks, 16 at a time, each printed once its await returned.
_CHILD = """
import asyncio, sys
from gateway.state import Entry, SqliteStore

async def main(path):
    store = SqliteStore(path)
    await store.open()

    async def one(n):
        body = {"n": n}
        added = await store.append(Entry(f"e{n}", f"c{n % 4}", "t", body), f"claim:{n}", 60)
        print("appended", added.id, flush=True)
        added.state = "running"
        await store.update(added)
        print("running", added.id, flush=True)

    n = 0
    while True:
        await asyncio.gather(*(one(n + i) for i in range(16)))
        n += 16

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.parametrize("lines", [7, 120, 401])
async def test_what_an_await_returned_survives_a_kill(tmp_path: Path, lines: int):
    path = tmp_path / "state.sqlite3"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CHILD, str(path), cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdout is not None
    told: list[bytes] = []
    while len(told) < lines:
        line = await asyncio.wait_for(child.stdout.readline(), 60)
        assert line, "the child ended early"
        told.append(line)
    child.send_signal(signal.SIGKILL)  # mid-stream: appends and marks in flight
    # Printed before it died: returned. A line the kill cut short proves nothing: left out.
    rest = await child.stdout.read()
    told.extend(rest.splitlines()[: rest.count(b"\n")])
    await child.wait()

    store = SqliteStore(path)
    await store.open()
    try:
        kept = {e.id: e.state for e in await store.pending()}
        for line in told:
            said, entry_id = line.decode().split()
            assert entry_id in kept, (said, entry_id)
            if said == "running":
                assert kept[entry_id] == "running", entry_id
            assert await store.recall(f"claim:{entry_id[1:]}") == 1
    finally:
        await store.close()
