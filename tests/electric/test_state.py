"""The durable state store: the same behaviour in memory and in SQLite."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.state import MemoryStore, SqliteStore, StateStore, StoreUnavailable, open_store
from slashgate.config import Settings


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


async def test_values_must_be_json(store: StateStore):
    with pytest.raises(TypeError):
        await store.set("k", object())


async def test_concurrent_writes_all_land(store: StateStore):
    await asyncio.gather(*(store.set(f"q:{i}", i) for i in range(50)))
    assert [await store.get(f"q:{i}") for i in range(50)] == list(range(50))


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
    with pytest.raises(StoreUnavailable, match="not open"):
        await SqliteStore(tmp_path / "s.sqlite3").get("k")


async def test_memory_store_forgets_the_least_recently_used_beyond_its_size():
    store = MemoryStore(max_items=3)
    for key in ("a", "b", "c"):
        await store.set(key, key)
    assert await store.get("a") == "a"  # read: "b" is now the least recently used
    await store.set("d", "d")
    assert await store.get("b") is None
    await store.set("c", "c2")  # replacing a key makes room for nothing else
    assert [await store.get(k) for k in ("a", "c", "d")] == ["a", "c2", "d"]


def test_memory_store_size_must_be_positive():
    with pytest.raises(ValueError, match="max_items"):
        MemoryStore(max_items=0)


def test_settings_choose_the_store(tmp_path: Path):
    chosen_memory = open_store(Settings(store="memory", memory_store_size=7))
    assert isinstance(chosen_memory, MemoryStore) and chosen_memory.max_items == 7
    chosen = open_store(Settings(store="sqlite", state_path=tmp_path / "s.sqlite3"))
    assert isinstance(chosen, SqliteStore) and chosen.path == tmp_path / "s.sqlite3"
