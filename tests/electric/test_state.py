"""The durable state store: the same behaviour in memory and in SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.config import Settings
from gateway.state import MemoryStore, SqliteStore, StateStore, open_store


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    chosen: StateStore = (
        MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "state.sqlite3")
    )
    await chosen.open()
    try:
        yield chosen
    finally:
        await chosen.close()


async def test_json_values_round_trip(store: StateStore):
    value = {"offset": "0000_0001", "commands": [{"name": "déploy 🚀", "n": 1.5}], "ok": True}
    await store.set("electric:stream:a", value)
    assert await store.get("electric:stream:a") == value
    assert await store.get("electric:stream:missing") is None


async def test_values_are_copies(store: StateStore):
    value = {"items": [1]}
    await store.set("k", value)
    value["items"].append(2)
    got = await store.get("k")
    got["items"].append(3)
    assert await store.get("k") == {"items": [1]}


async def test_set_replaces_and_delete_removes(store: StateStore):
    await store.set("k", 1)
    await store.set("k", [2])
    assert await store.get("k") == [2]
    assert await store.delete("k") is True
    assert await store.delete("k") is False
    assert await store.get("k") is None


async def test_scan_by_namespace(store: StateStore):
    for key in (
        "electric:stream:a",
        "electric:stream:b",
        "electric:other",
        "dedupe:x",
        "electric:stream%_",
    ):
        await store.set(key, key)
    found = await store.scan("electric:stream:")
    assert found == {
        "electric:stream:a": "electric:stream:a",
        "electric:stream:b": "electric:stream:b",
    }
    assert await store.scan("electric:stream%") == {"electric:stream%_": "electric:stream%_"}


async def test_values_must_be_json(store: StateStore):
    with pytest.raises(TypeError):
        await store.set("k", object())


async def test_concurrent_writes_all_land(store: StateStore):
    await asyncio.gather(*(store.set(f"q:{i}", i) for i in range(50)))
    assert await store.scan("q:") == {f"q:{i}": i for i in range(50)}


async def test_sqlite_state_survives_a_reopen(tmp_path: Path):
    path = tmp_path / "nested" / "state.sqlite3"
    first = SqliteStore(path)
    await first.open()
    await first.set("electric:stream:a", {"offset": "7"})
    await first.close()
    second = SqliteStore(path)
    await second.open()
    try:
        assert await second.get("electric:stream:a") == {"offset": "7"}
    finally:
        await second.close()


async def test_sqlite_store_refuses_use_before_open(tmp_path: Path):
    with pytest.raises(RuntimeError, match="not open"):
        await SqliteStore(tmp_path / "s.sqlite3").get("k")


def test_settings_choose_the_store(tmp_path: Path):
    assert isinstance(open_store(Settings(store="memory")), MemoryStore)
    chosen = open_store(Settings(store="sqlite", state_path=tmp_path / "s.sqlite3"))
    assert isinstance(chosen, SqliteStore) and chosen.path == tmp_path / "s.sqlite3"
