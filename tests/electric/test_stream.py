"""Reading the entity stream: SSE reconnects, live inventory, resuming after a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from contract import Command
from gateway.state import SqliteStore

from .conftest import ENTITY_TYPE, commands, say, say_streaming
from .fake_server import FakeElectric, format_offset


@pytest.mark.parametrize("how", ["clean", "torn", "abort"])
async def test_sse_disconnect_in_the_middle_of_a_run(fake: FakeElectric, electric_gateway, how):
    async with electric_gateway() as server:
        events = await say_streaming(server, f"interrupt {how}")

    assert events[-1][1]["reply"]["text"] == "one two three four"  # whole, nothing twice
    assert "".join(d["text"] for e, d in events if e == "delta") == "one two three four"
    assert fake.sse_disconnects == 1
    (entity,) = fake.entities.values()
    reads = [r.query for r in fake.reads(entity.stream.path)]
    first_sse = next(i for i, q in enumerate(reads) if q.get("live") == "sse")
    two = next(i for i, e in enumerate(entity.stream.events) if e["value"].get("delta") == "two ")
    # The reader came back (over SSE, or catching up first after an error) from the offset of
    # the last batch it applied: after "two ", even when "three " had arrived without control.
    assert reads[first_sse + 1]["offset"] == format_offset(two + 1)


async def test_routine_sse_closes_are_followed(electric_gateway, fake: FakeElectric):
    fake.sse_max_duration = 0.02  # the real server ends every SSE response after about 60 s
    async with electric_gateway() as server:
        await say(server, "hello")
        (entity,) = fake.entities.values()
        path = entity.stream.path
        await fake.until(lambda: len(fake.reads(path)) >= 5)
        body = await say(server, "still here")

    assert body["reply"]["text"] == "still here"
    offsets = [int(r.query["offset"].split("_")[1]) for r in fake.reads(path)[1:]]
    assert offsets == sorted(offsets)  # never back, never ahead of what was read


async def test_inventory_updates_are_published_live(fake: FakeElectric, electric_gateway):
    published: list[tuple[str, ...]] = []
    changed = asyncio.Event()

    def listener(key: str, menu: tuple[Command, ...]) -> None:
        published.append(tuple(c.name for c in menu))
        changed.set()

    async with electric_gateway() as server:
        server.gateway.subscribe_conversation(listener)
        assert (await say(server, "/standup"))["reply"]["category"] == "unsupported"

        assert (await say(server, "learn standup"))["reply"]["text"] == "Learned /standup."
        assert "standup" in published[-1]
        listed = await commands(server)
        assert listed["standup"]["source"] == "dynamic"
        assert listed["standup"]["description"] == "Learned command standup"
        ran = await say(server, "/standup now")
        assert ran["reply"]["text"] == "Ran /standup with 'now'."

        # Out of any turn: the agent registers a command on its own (a schedule, another
        # client): channels hear of it without anyone writing.
        changed.clear()
        (entity,) = fake.entities.values()
        fake.register(entity, "retro", "Run a retro", None)
        await asyncio.wait_for(changed.wait(), 5)
        assert "retro" in published[-1] and "retro" in await commands(server)

        assert (await say(server, "forget standup"))["reply"]["text"] == "Forgot /standup."
        assert "standup" not in published[-1]
        gone = await say(server, "/standup")

    assert gone["reply"] == {
        "text": "Unsupported slash command /standup. Send /help to list available commands.",
        "category": "unsupported",
        "stop_reason": None,
    }


async def test_dynamic_override_of_a_static_command_and_back(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        await say(server, "learn deploy")
        overridden = await commands(server)
        await say(server, "forget deploy")
        restored = await commands(server)

    assert overridden["deploy"]["source"] == "dynamic"
    assert overridden["deploy"]["description"] == "Learned command deploy"
    assert restored["deploy"]["source"] == "static"
    assert restored["deploy"]["description"] == "Deploy a build"


async def test_reading_resumes_from_the_saved_offset_after_a_restart(
    fake: FakeElectric, electric_gateway, tmp_path: Path
):
    state = tmp_path / "state" / "gateway.sqlite3"
    settings = {"store": "sqlite", "state_path": state}
    async with electric_gateway(**settings) as server:
        await say(server, "learn standup")
        assert (await say(server, "before")).get("reply", {}).get("text") == "before"
        (entity,) = fake.entities.values()
        path = entity.stream.path
        await fake.until(lambda: entity.stream.delivered == entity.stream.tail)

    store = SqliteStore(state)
    await store.open()
    saved = await store.get(f"electric:stream:{ENTITY_TYPE}/{entity.id}")
    await store.close()
    assert saved["offset"] == format_offset(entity.stream.tail)

    # While the gateway is down the agent learns another command.
    fake.register(entity, "retro", "Run a retro", None)
    reads_before = len(fake.reads(path))

    async with electric_gateway(**settings) as server:
        listed = await commands(server)
        after = await say(server, "after")

    first = fake.reads(path)[reads_before]
    assert first.query["offset"] == saved["offset"]  # not -1: nothing is read twice
    assert {"standup", "retro", "deploy"} <= set(listed)
    assert after["reply"]["text"] == "after"


async def test_an_offset_dropped_by_retention_is_read_again_from_the_start(
    fake: FakeElectric, electric_gateway, tmp_path: Path
):
    settings = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with electric_gateway(**settings) as server:
        await say(server, "learn standup")
        (entity,) = fake.entities.values()
    fake.register(entity, "old", "Dropped with the history", None)
    fake.register(entity, "retro", "Run a retro", None)
    entity.stream.retained_from = entity.stream.tail - 1  # only the "retro" row is left

    async with electric_gateway(**settings) as server:
        listed = await commands(server)
        body = await say(server, "/retro")

    statuses = [r.query.get("offset") for r in fake.reads(entity.stream.path)]
    assert "-1" in statuses[1:]  # after the 410, from the start of what is retained
    assert {"retro", "deploy", "pr-review"} <= set(listed)  # the type fills in its own
    assert not {"standup", "old"} & set(listed)  # their rows went with the dropped history
    assert body["reply"]["text"] == "Ran /retro."


async def test_withdrawn_commands_go_when_retention_drops_the_offset_of_a_live_reader(
    fake: FakeElectric, electric_gateway
):
    published: list[set[str]] = []
    changed = asyncio.Event()

    def listener(key: str, menu: tuple[Command, ...]) -> None:
        published.append({c.name for c in menu})
        changed.set()

    async with electric_gateway() as server:
        server.gateway.subscribe_conversation(listener)
        await say(server, "learn standup")
        assert "standup" in published[-1]
        (entity,) = fake.entities.values()
        # The reader misses the delete (torn SSE: data without its control event), and
        # retention then drops everything it had not read: it gets a 410 and rereads a
        # history with no slash_command row at all.
        changed.clear()
        entity.stream.disconnect_sse(torn=True)
        fake.unregister(entity, "standup")
        entity.stream.retained_from = entity.stream.tail
        await asyncio.wait_for(changed.wait(), 5)
        listed = await commands(server)

    assert "standup" not in published[-1] and "standup" not in listed
    assert {"deploy", "pr-review"} <= published[-1]  # the type's own stay
