"""Claims, the journal and leases behave the same in memory, in SQLite and in Redis."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway import offload
from gateway.state import (
    Encoded,
    Entry,
    MemoryStore,
    SqliteStore,
    StateStore,
    StoreUnavailable,
    open_store,
)
from gateway.state.redis import RedisStore
from gateway.state.sqlite import _MIGRATIONS, SCHEMA_VERSION
from slashgate.config import Settings
from tests.redis_server import REDIS, redis_server

KINDS = ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.skipif(
    REDIS is None, reason="redis-server is not installed"))]  # fmt: skip


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    if request.param == "redis":
        async with redis_server(tmp_path) as server:
            chosen: StateStore = RedisStore(server.url, max_claims=5)
            await chosen.open()
            yield chosen
            await chosen.close()
        return
    if request.param == "memory":
        chosen = MemoryStore(max_claims=5)
    else:
        chosen = SqliteStore(tmp_path / "state.sqlite3", max_claims=5)
    await chosen.open()
    try:
        yield chosen
    finally:
        await chosen.close()


def entry(conversation: str, text: str) -> Entry:
    return Entry(id=text, conversation=conversation, channel="t", body={"text": text, "n": []})


async def test_a_claim_is_taken_once_and_keeps_its_value(store: StateStore):
    assert await store.claim("k", {"fingerprint": "a"}, 60) == (True, None)
    assert await store.claim("k", {"fingerprint": "b"}, 60) == (False, {"fingerprint": "a"})
    await store.remember("k", {"fingerprint": "a", "answer": {"text": "hi"}}, 60)
    assert await store.recall("k") == {"fingerprint": "a", "answer": {"text": "hi"}}
    await store.forget("k")
    assert await store.recall("k") is None
    assert await store.claim("k", 1, 60) == (True, None)


async def test_an_expired_claim_can_be_taken_again(store: StateStore):
    assert (await store.claim("k", 1, 0.05))[0]
    await asyncio.sleep(0.06)  # what is tested is the passing of time itself
    assert await store.recall("k") is None
    assert (await store.claim("k", 2, 60))[0]


async def test_claims_are_bounded_by_count_oldest_first(store: StateStore):
    for i in range(300):  # SQLite sweeps every 256 writes; the others at once
        await store.claim(f"k{i}", i, 60 + i)
    assert await store.recall("k299") == 299
    assert await store.recall("k0") is None
    kept = [i for i in range(300) if await store.recall(f"k{i}") is not None]
    assert len(kept) <= 5 + 255 and kept[-5:] == [295, 296, 297, 298, 299]


async def test_an_appended_entry_comes_back_as_written_with_its_place(store: StateStore):
    # Every store hands back the entry it was given (not a copy decoded again), its seq set;
    # what it keeps is the entry's encoding, so a later change of the object is not stored.
    given = entry("c1", "héllo")
    added = await store.append(given, None, 60)
    assert added is given and added.seq > 0
    given.body["text"] = "changed after"
    (kept,) = await store.pending("c1")
    assert kept.body == {"text": "héllo", "n": []} and kept.seq == added.seq


async def test_the_journal_keeps_arrival_order_per_conversation(store: StateStore):
    first = await store.append(entry("c1", "a"), "claim:a", 60)
    second = await store.append(entry("c2", "b"), None, 60)
    third = await store.append(entry("c1", "c"), "claim:c", 60)
    assert first and second and third and first.seq < second.seq < third.seq
    assert [e.id for e in await store.pending()] == ["a", "b", "c"]
    assert [e.id for e in await store.pending("c1")] == ["a", "c"]
    assert (await store.pending("c1"))[0].body == {"text": "a", "n": []}
    # A redelivery: the claim is held, nothing is journaled.
    assert await store.append(entry("c1", "a2"), "claim:a", 60) is None
    assert [e.id for e in await store.pending("c1")] == ["a", "c"]


async def test_entries_move_through_their_states_until_finished(store: StateStore):
    added = await store.append(entry("c1", "a"), None, 60)
    assert added is not None
    added.state, added.command = "running", "deploy"
    assert await store.update(added)
    added.state, added.reply = "answered", {"text": "done", "category": None}
    assert await store.update(added)
    [kept] = await store.pending()
    assert (kept.state, kept.command, kept.reply) == ("answered", "deploy", added.reply)
    await store.finish(added)
    assert await store.pending() == []
    assert await store.update(added)  # a finished entry stays finished
    assert await store.pending() == []


async def test_a_lease_has_one_holder_and_a_fencing_token_that_grows(store: StateStore):
    first = await store.acquire("conversation:c1", "r1", 0.2)
    assert first is not None
    assert await store.acquire("conversation:c1", "r2", 0.2) is None
    assert await store.holder("conversation:c1") == "r1"
    again = await store.acquire("conversation:c1", "r1", 0.2)
    assert again == first  # held already: renewed, same token
    await store.release(first)
    second = await store.acquire("conversation:c1", "r2", 10)
    assert second is not None and second.token > first.token
    assert not await store.renew(first, 10)  # not ours any more


async def test_a_stale_holder_cannot_write_once_its_lease_moved_on(store: StateStore):
    added = await store.append(entry("c1", "a"), None, 60)
    assert added is not None
    old = await store.acquire("conversation:c1", "r1", 0.05)
    assert old is not None
    await asyncio.sleep(0.06)  # the lease expires: what is tested is the passing of time
    assert await store.holder("conversation:c1") is None
    new = await store.acquire("conversation:c1", "r2", 10)
    assert new is not None
    added.state = "running"
    assert not await store.update(added, old)
    assert (await store.pending())[0].state == "received"
    assert await store.update(added, new)
    assert (await store.pending())[0].state == "running"


async def test_a_turn_waits_for_the_older_inputs_of_its_conversation(store: StateStore):
    first = await store.append(entry("c1", "a"), None, 60)
    other = await store.append(entry("c2", "b"), None, 60)
    second = await store.append(entry("c1", "c"), None, 60)
    assert first and other and second
    name = "conversation:c1"
    assert await store.take_turn(name, "r1", 10, "c1", second.seq) is None  # "a" first
    assert await store.holder(name) is None  # nothing held meanwhile
    turn = await store.take_turn(name, "r1", 10, "c1", first.seq)
    assert turn is not None and await store.holder(name) == "r1"
    assert await store.take_turn(name, "r2", 10, "c1", None) is None  # r1 holds it
    await store.release(turn)
    await store.finish(first)
    after = await store.take_turn(name, "r2", 10, "c1", second.seq)
    assert after is not None and after.token > turn.token


async def test_a_turn_taken_marks_its_input_running_in_the_same_step(store: StateStore):
    first = await store.append(entry("c1", "a"), None, 60)
    second = await store.append(entry("c1", "b"), None, 60)
    assert first and second
    second.state, second.command = "running", "echo"
    name = "conversation:c1"
    assert await store.take_turn(name, "r1", 10, "c1", second.seq, second) is None  # "a" first
    assert [e.state for e in await store.pending("c1")] == ["received", "received"]
    first.state, first.command = "running", "echo"
    assert await store.take_turn(name, "r1", 10, "c1", first.seq, first) is not None
    assert [(e.state, e.command) for e in await store.pending("c1")] == [
        ("running", "echo"), ("received", None),
    ]  # fmt: skip


async def test_a_delivered_turn_lets_go_of_its_lease_and_its_entry_at_once(store: StateStore):
    first = await store.append(entry("c1", "a"), None, 60)
    second = await store.append(entry("c1", "b"), None, 60)
    assert first and second
    name = "conversation:c1"
    turn = await store.take_turn(name, "r1", 10, "c1", first.seq)
    assert turn is not None
    await store.release_finished(turn, first)
    assert [e.id for e in await store.pending("c1")] == ["b"]
    after = await store.take_turn(name, "r2", 10, "c1", second.seq)  # the next turn, at once
    assert after is not None
    # A lease another replica took meanwhile stays theirs; the entry goes all the same.
    await store.release_finished(turn, second)
    assert await store.holder(name) == "r2" and await store.pending("c1") == []


async def test_sqlite_keeps_everything_across_reopening(tmp_path: Path):
    path = tmp_path / "state.sqlite3"
    store = SqliteStore(path)
    await store.open()
    await store.append(entry("c1", "a"), "claim:a", 60)
    await store.set("kv", {"x": 1})
    await store.close()
    again = SqliteStore(path)
    await again.open()
    assert [e.id for e in await again.pending()] == ["a"]
    assert await again.recall("claim:a") == 1
    assert await again.get("kv") == {"x": 1}
    await again.close()


async def test_sqlite_migrates_a_file_of_the_first_schema(tmp_path: Path):
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO state VALUES ('electric:stream:x', '\"0001\"')")
    db.commit()
    db.close()
    store = SqliteStore(path)
    await store.open()
    assert await store.get("electric:stream:x") == "0001"
    assert await store.append(entry("c1", "a"), None, 60) is not None
    await store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


async def test_sqlite_migrates_the_journal_of_schema_4_with_its_entries(tmp_path: Path):
    path = tmp_path / "v4.sqlite3"
    db = sqlite3.connect(path)
    for step in _MIGRATIONS[:4]:
        for statement in step:
            db.execute(statement)
    record = entry("c1", "a").encode()
    db.execute("INSERT INTO journal (id, conversation, entry, status) VALUES ('a', 'c1', ?, ?)",
               (record, json.dumps({"state": "running", "command": "echo"})))  # fmt: skip
    db.execute("PRAGMA user_version = 4")
    db.commit()
    db.close()
    store = SqliteStore(path)
    await store.open()
    [kept] = await store.pending()
    assert (kept.id, kept.state, kept.command) == ("a", "running", "echo")
    kept.state = "answered"
    await store.update(kept)
    assert [e.state for e in await store.pending("c1")] == ["answered"]
    await store.close()


async def test_a_late_mark_of_a_dropped_entry_leaves_the_next_one_alone(store: StateStore):
    first = await store.append(entry("c1", "a"), None, 60)
    assert first is not None
    await store.finish(first)
    second = await store.append(entry("c1", "b"), None, 60)  # SQLite may give it a's seq
    assert second is not None
    first.state = "answered"
    await store.update(first)
    await store.finish(first)
    assert [(e.id, e.state) for e in await store.pending("c1")] == [("b", "received")]


async def test_sqlite_refuses_a_file_from_a_newer_gateway(tmp_path: Path):
    path = tmp_path / "new.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(StoreUnavailable, match="newer than this gateway"):
        await SqliteStore(path).open()


@pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
async def test_redis_down_is_store_unavailable_and_up_again_works(tmp_path: Path):
    async with redis_server(tmp_path) as server:
        store = RedisStore(server.url)
        await store.open()
        await store.set("k", 1)
        await server.stop()
        with pytest.raises(StoreUnavailable):
            await store.append(entry("c1", "a"), "claim:a", 60)
        await server.start()
        assert await store.append(entry("c1", "a"), "claim:a", 60) is not None
        await store.close()


@pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
async def test_connections_that_died_with_a_restarted_redis_are_replaced_unseen(tmp_path: Path):
    async with redis_server(tmp_path) as server:
        store = RedisStore(server.url)
        await store.open()
        await asyncio.gather(*(store.set(f"k{n}", n) for n in range(5)))  # 5 pooled connections
        await server.restart()
        for n in range(5):  # each pooled connection is found dead once, and replaced
            await store.set(f"k{n}", n)
        assert await store.get("k4") == 4
        await store.close()


async def test_a_burst_of_inputs_is_journaled_whole(store: StateStore):
    # More at once than redis-py's connection pool held (100): they wait for a connection.
    added = await asyncio.gather(
        *(store.append(entry(f"c{n}", f"e{n}"), None, 60) for n in range(300))
    )
    assert all(added)
    assert len(await store.pending()) == 300


async def test_a_task_cancelled_mid_operation_ends_cancelled(store: StateStore):
    # A cancel must reach the caller wherever it lands in a store call: a swallowed one
    # leaves loops (a replica's leader lease) running, and shutdown hangs.
    over = False

    async def renewing() -> None:
        while not over:
            await store.acquire("leader", "me", 5.0)
            await asyncio.sleep(0)  # the memory store answers without yielding to the loop

    survivors = []
    for turn in range(100):
        task = asyncio.ensure_future(renewing())
        for _ in range(turn % 25):  # a different point of the round trip each time
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait({task}, timeout=1)
        if not task.cancelled():
            survivors.append(task)
    over = True
    await asyncio.gather(*survivors, return_exceptions=True)
    assert not survivors


@pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
async def test_redis_carries_a_message_to_every_replica_listening(tmp_path: Path):
    async with redis_server(tmp_path) as server:
        a, b = RedisStore(server.url), RedisStore(server.url)
        await a.open()
        await b.open()
        listening = b.listen("cancel")
        first = asyncio.ensure_future(anext(listening))
        while not first.done():  # published until the subscription is in place
            await a.publish("cancel", "telegram:7")
            await asyncio.wait({first}, timeout=0.05)
        assert first.result() == "telegram:7"
        await a.publish("cancel", "slack:T1:C1")
        assert await anext(listening) == "slack:T1:C1"
        await listening.aclose()
        await a.close()
        await b.close()


async def test_values_encoded_off_the_loop_read_back_as_they_were(store: StateStore):
    # A big answer and a big journal entry come to the store as UTF-8 bytes (Encoded), not
    # as text: each store keeps them and reads them back like any other value.
    answer = {"fingerprint": "f", "answer": {"text": "héllo 😀 " * 10_000}}
    await store.remember("big", Encoded(json.dumps(answer, ensure_ascii=False).encode()), 60)
    assert await store.recall("big") == answer
    assert await store.claim("big", {"fingerprint": "other"}, 60) == (False, answer)
    assert await store.claim("taken", Encoded(b'{"a": "\xc3\xa9"}'), 60) == (True, None)
    assert await store.claim("taken", 1, 60) == (False, {"a": "é"})
    big = entry("c", "😀" * (offload.THRESHOLD + 1))
    assert isinstance(await big.encoded(), bytes)
    added = await store.append(big, None, 60)
    assert added is not None and added.body == big.body
    assert [e.body for e in await store.pending("c")] == [big.body]


@pytest.mark.parametrize(("setting", "pragma"), [("full", 2), ("normal", 1)])
async def test_sqlite_syncs_as_the_operator_chose(tmp_path: Path, setting: str, pragma: int):
    settings = Settings(
        store="sqlite", state_path=tmp_path / "s.sqlite3", sqlite_synchronous=setting
    )  # type: ignore[call-arg]
    store = open_store(settings)
    await store.open()
    try:
        assert isinstance(store, SqliteStore)
        # What the store's thread commits with: every write that must be durable is its.
        level = await store.writer.submit(lambda db: db.execute("PRAGMA synchronous").fetchone())
        assert level[0] == pragma
    finally:
        await store.close()
