"""Fixtures: a fake Electric Agents server with an ``assistant`` type, and the gateway on it."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import aiohttp
import pytest

from contract import utf16_len, utf16_slice
from slashgate.registry import build_runtime
from slashgate.server import Running

from ..conftest import make_settings
from ..http import read_events
from .fake_server import EntityContext, FakeElectric, change

ENTITY_TYPE = "assistant"
STATIC_COMMANDS: list[dict[str, Any]] = [
    {
        "name": "deploy",
        "description": "Deploy a build",
        "arguments": [{"name": "environment", "type": "string", "required": True}],
    },
    {
        "name": "pr-review",
        "description": "Review a pull request",
        "arguments": [
            {"name": "number", "type": "number", "required": True},
            {"name": "include_tests", "type": "boolean"},
        ],
    },
]


async def assistant(ctx: EntityContext) -> None:
    """The test agent: replies in runs of text_delta events, learns and forgets commands."""
    payload = ctx.payload
    source: str = payload["source"]
    command = next((n for n in payload.get("nodes") or [] if n["kind"] == "slash_command"), None)
    name = command["name"] if command else None
    args = utf16_slice(source, command["end"], utf16_len(source)).strip() if command else ""
    words = source.split()
    if name == "deploy":
        await ctx.reply("Deploying ", args or "nothing", " now.")
    elif name is not None:
        await ctx.reply(f"Ran /{name}", f" with {args!r}." if args else ".")
    elif words[:1] == ["learn"]:
        ctx.register(words[1], f"Learned command {words[1]}")
        await ctx.reply(f"Learned /{words[1]}.")
    elif words[:1] == ["forget"]:
        ctx.unregister(words[1])
        await ctx.reply(f"Forgot /{words[1]}.")
    elif source == "fail":
        run = ctx.start_run()
        ctx.text(run, "Trying")
        ctx.error("TOOL_FAILED", "boom", run)
        ctx.end_run(run, "failed", "error")
    elif source == "crash":
        raise RuntimeError("handler crashed")
    elif source == "crash mid-run":
        run = ctx.start_run()
        ctx.text(run, "Half")
        raise RuntimeError("handler crashed mid-run")
    elif source == "processing":
        ctx.error("WAKE_FAILED", "Agent is already processing")
    elif source == "two messages":
        run = ctx.start_run()
        ctx.text(run, "First.")
        ctx.text(run, "Second.")
        ctx.end_run(run)
    elif source == "slow":
        run = ctx.start_run()
        ctx.text(run, "Working")
        await asyncio.Event().wait()  # until SIGINT cancels the handler
    elif words[:1] == ["interrupt"]:
        await interrupted(ctx, words[1])
    elif files := payload.get("attachments"):  # compositor parts, as an agent reads them
        got = (f"{f['name']} ({f['mime']}, {len(base64.b64decode(f['data']))} bytes)"
               for f in files)  # fmt: skip
        await ctx.reply(f"{source}: " if source else "", "got ", ", ".join(got))
    elif source == "use a tool":
        await with_a_tool(ctx)
    else:
        await ctx.reply(*(source[i : i + 4] for i in range(0, len(source), 4)))


async def with_a_tool(ctx: EntityContext) -> None:
    """A run with a step (naming its model) and a tool call, as the agents runtime writes them:
    the call is inserted when it starts and updated by key (without its run) as it goes.
    """
    run = ctx.start_run()
    step = {"run_id": run, "step_number": 1, "status": "started", "model_id": "claude-x"}
    ctx.stream.append(change("step", f"{run}:step-1", step))
    call = f"{run}:tool-1"
    started = {"run_id": run, "tool_call_id": "tc1", "tool_name": "read_file", "status": "started"}
    ctx.stream.append(change("tool_call", call, started))
    for status, extra in (("executing", {}), ("completed", {"result": "12 lines"})):
        value = {"tool_name": "read_file", "status": status, **extra}
        ctx.stream.append(change("tool_call", call, value, "update"))
    ctx.text(run, "Read it.")
    ctx.end_run(run)


async def interrupted(ctx: EntityContext, how: str) -> None:
    """A run whose SSE response the server ends half-way: ``clean``, ``torn`` (after a data
    event, before its control event) or ``abort`` (the connection drops after torn data).
    """
    await ctx.sse_open()
    run = ctx.start_run()
    text = ctx.begin_text(run)
    ctx.delta(run, text, 0, "one ")
    ctx.delta(run, text, 1, "two ")
    await ctx.delivered()
    conns = ctx.stream.disconnect_sse(torn=how != "clean", abort=how == "abort")
    if how == "clean":
        await ctx.ended(conns)
    ctx.delta(run, text, 2, "three ")
    await ctx.ended(conns)
    ctx.delta(run, text, 3, "four")
    ctx.end_text(run, text)
    ctx.end_run(run)


@pytest.fixture
async def fake() -> AsyncIterator[FakeElectric]:
    server = FakeElectric(long_poll_timeout=0.05)
    server.add_type(ENTITY_TYPE, STATIC_COMMANDS, assistant)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


GatewayFactory = Callable[..., AbstractAsyncContextManager[Running]]


@pytest.fixture
def electric_gateway(fake: FakeElectric, gateway_server: Any) -> GatewayFactory:
    """``async with electric_gateway(**settings) as server``: the gateway in front of the fake
    server, its runtime built by ``build_runtime`` from settings with ``runtime="electric"``.
    """

    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[Running]:
        values = {"electric_url": fake.url, **overrides}
        runtime = build_runtime(make_settings(runtime="electric", **values))
        async with gateway_server(runtime=runtime, **values) as server:
            yield server

    return start


async def say(
    server: Running, text: str, conversation: str = "c1", user: str = "alice"
) -> dict[str, Any]:
    """POST /v1/messages (JSON); the response body."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/v1/messages",
            json={"conversation": conversation, "user": user, "text": text},
        ) as response,
    ):
        assert response.status == 200, await response.text()
        body: dict[str, Any] = await response.json()
        return body


async def say_streaming(
    server: Running, text: str, conversation: str = "c1", user: str = "alice"
) -> list[tuple[str, dict[str, Any]]]:
    """POST /v1/messages with Accept: text/event-stream; the (event, data) pairs in order."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{server.url}/v1/messages",
            json={"conversation": conversation, "user": user, "text": text},
            headers={"Accept": "text/event-stream"},
        ) as response,
    ):
        assert response.status == 200, await response.text()
        return [pair async for pair in read_events(response)]


async def commands(server: Running, conversation: str = "c1") -> dict[str, dict[str, Any]]:
    """GET /v1/commands?conversation=...: the effective inventory by name."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{server.url}/v1/commands", params={"conversation": conversation}) as response,
    ):
        assert response.status == 200
        body = await response.json()
    return {c["name"]: c for c in body["commands"]}
