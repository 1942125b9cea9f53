"""Commands declared on the entity type after a conversation opened (the type registered again)
reach that conversation: its list is read again, at most once per ``type_refresh`` seconds."""

from __future__ import annotations

import asyncio
import logging
import time

import aiohttp
import pytest

from gateway.runtimes.electric.runtime import ElectricRuntime
from slashgate.server import Running

from .conftest import ENTITY_TYPE, STATIC_COMMANDS, GatewayFactory, commands, say
from .fake_server import FakeElectric

SUMMARIZE = {"name": "summarize", "description": "Summarize the conversation"}
UNSUPPORTED = "Unsupported slash command /{}. Send /help to list available commands."


async def declare_again(fake: FakeElectric) -> None:
    """Register the type again with one more command, as its developer would."""
    declaration = {
        "name": ENTITY_TYPE,
        "description": "test agent",
        "slash_commands": [*STATIC_COMMANDS, SUMMARIZE],
    }
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{fake.url}/_electric/entity-types", json=declaration) as response,
    ):
        assert response.status == 201


def type_reads(fake: FakeElectric) -> int:
    path = f"/_electric/entity-types/{ENTITY_TYPE}"
    return sum(1 for r in fake.requests if r.method == "GET" and r.path == path)


def clock(server: Running) -> list[float]:
    """The runtime's clock, moved on by adding to the list's one item."""
    runtime = server.gateway.runtime
    assert isinstance(runtime, ElectricRuntime)
    ahead = [0.0]
    runtime.clock = lambda: time.monotonic() + ahead[0]
    return ahead


async def test_a_command_declared_later_reaches_the_conversations_already_open(
    fake: FakeElectric, electric_gateway: GatewayFactory
) -> None:
    async with electric_gateway() as server:
        assert (await say(server, "hello"))["reply"]["text"] == "hello"
        assert "summarize" not in await commands(server, "c1")
        await declare_again(fake)
        new = await say(server, "/summarize", conversation="c2")
        listed = await commands(server, "c1")  # the new conversation's open read the type
        old = await say(server, "/summarize", conversation="c1")

    assert new["reply"]["text"] == "Ran /summarize."
    assert listed["summarize"]["description"] == "Summarize the conversation"
    assert old["reply"]["text"] == "Ran /summarize."


async def test_an_unlisted_command_reads_the_type_again_at_most_once_per_interval(
    fake: FakeElectric, electric_gateway: GatewayFactory
) -> None:
    async with electric_gateway() as server:
        ahead = clock(server)
        await say(server, "hello")
        await declare_again(fake)
        reads = type_reads(fake)
        early = [await say(server, text) for text in ("/summarize", "/sumarize", "/sumarize")]
        assert type_reads(fake) == reads  # read less than an interval ago: typos cost nothing

        ahead[0] += server.gateway.runtime.type_refresh  # type: ignore[attr-defined]
        late = await say(server, "/summarize")
        typos = [await say(server, "/sumarize") for _ in range(3)]

    assert [b["reply"]["text"] for b in early] == [
        UNSUPPORTED.format("summarize"),
        UNSUPPORTED.format("sumarize"),
        UNSUPPORTED.format("sumarize"),
    ]
    assert late["reply"]["text"] == "Ran /summarize."
    assert [b["reply"]["text"] for b in typos] == [UNSUPPORTED.format("sumarize")] * 3
    assert type_reads(fake) == reads + 1


async def test_a_turn_reads_a_list_older_than_the_interval(
    fake: FakeElectric, electric_gateway: GatewayFactory
) -> None:
    async with electric_gateway() as server:
        ahead = clock(server)
        await say(server, "hello")
        await declare_again(fake)
        await say(server, "still here")
        assert "summarize" not in await commands(server, "c1")
        ahead[0] += server.gateway.runtime.type_refresh  # type: ignore[attr-defined]
        await say(server, "and now")
        listed = await commands(server, "c1")

    assert "summarize" in listed


async def test_an_input_run_before_the_list_is_loaded_is_reported_as_it_ran(
    fake: FakeElectric, electric_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Forwarded as typed (the conversation's list not loaded yet) and answered: the API
    answer and the log said ``unsupported``.
    """
    caplog.set_level(logging.INFO)
    fake.streams_held = asyncio.Event()  # the entity's stream, and so its list, comes late
    async with electric_gateway(inventory_wait=0.05) as server:
        asking = asyncio.create_task(say(server, "/summarize now"))
        await fake.until(lambda: any(r.path.endswith("/send") for r in fake.requests))
        fake.streams_held.set()
        body = await asking

    assert body["classification"] == {"kind": "supported", "command": "summarize", "args": "now"}
    assert body["reply"]["text"] == "/summarize now"  # the agent got it, as typed
    assert body["forwarded"]["payload"]["source"] == "/summarize now"
    [turn] = [r for r in caplog.records if r.getMessage() == "turn"]
    assert turn.slashgate_fields["classification"] == "supported"
