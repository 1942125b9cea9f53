"""Opening the SQLite store is safe for any number of processes at once (issue 21, defect 4):
each creates or migrates the schema under one write lock, so none sees a half-made one.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

from gateway.state.sqlite import SCHEMA_VERSION
from tests.http import ROOT

PROCESSES = 8
ROUNDS = 4

# Imports first, then "ready", then the open on "go": the opens start within a few ms.
_OPENER = """
import asyncio, sys
from gateway.state import Entry, SqliteStore

async def main(path):
    store = SqliteStore(path)
    print("ready", flush=True)
    sys.stdin.readline()
    await store.open()
    entry = Entry(id=sys.argv[2], conversation="c", channel="t", body={})
    assert await store.append(entry, "claim:" + sys.argv[2], 60) is not None
    await store.close()

asyncio.run(main(sys.argv[1]))
"""


async def _open_together(path: Path, count: int) -> list[tuple[int, str]]:
    openers = []
    for n in range(count):
        opener = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _OPENER, str(path), f"p{n}",
            cwd=ROOT, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        openers.append(opener)
    for opener in openers:
        assert opener.stdout is not None
        assert await opener.stdout.readline() == b"ready\n"
    for opener in openers:
        assert opener.stdin is not None
        opener.stdin.write(b"go\n")
    results = []
    for opener in openers:
        output, _ = await opener.communicate()
        results.append((opener.returncode or 0, output.decode(errors="replace")))
    return results


async def test_many_processes_open_one_new_state_file_at_once(tmp_path: Path):
    for round_ in range(ROUNDS):
        path = tmp_path / f"round-{round_}" / "state.sqlite3"
        results = await _open_together(path, PROCESSES)
        failed = [output for code, output in results if code != 0]
        assert not failed, f"round {round_}: {len(failed)} of {PROCESSES} failed:\n{failed[0]}"
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            assert db.execute("SELECT count(*) FROM journal").fetchone()[0] == PROCESSES
