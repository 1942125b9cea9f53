"""The SQLite state file and its -wal and -shm are readable by the gateway's user only (0600):
it holds conversations' commands, session ids and journal entries (issue 32: it was 0644).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.state import SqliteStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The usual umask (022), whatever the test runner's: files would be 0644."""
    old = os.umask(0o022)
    yield
    os.umask(old)


async def test_the_state_file_and_its_wal_are_created_0600(
    tmp_path: Path, loose_umask: None
) -> None:
    path = tmp_path / "new" / "state.sqlite3"
    store = SqliteStore(path)
    await store.open()
    try:
        await store.set("k", {"v": 1})
        files = sorted(p.name for p in path.parent.iterdir())
        assert files == ["state.sqlite3", "state.sqlite3-shm", "state.sqlite3-wal"]
        assert [mode(path.parent / name) for name in files] == [0o600, 0o600, 0o600]
        assert mode(path.parent) == 0o700  # a folder the store made
    finally:
        await store.close()


async def test_a_state_file_left_readable_by_others_is_made_private(
    tmp_path: Path, loose_umask: None
) -> None:
    path = tmp_path / "state.sqlite3"
    store = SqliteStore(path)
    await store.open()
    await store.set("k", {"v": 1})
    await store.close()
    path.chmod(0o644)  # as an older gateway made it
    again = SqliteStore(path)
    await again.open()
    try:
        assert await again.get("k") == {"v": 1}
        assert mode(path) == 0o600
        assert [mode(path.with_name(path.name + end)) for end in ("-wal", "-shm")] == [0o600] * 2
    finally:
        await again.close()
