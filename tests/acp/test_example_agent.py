"""examples/acp_agent.py, the template for your own agent process, behind the ACP runtime."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from contract import Command
from gateway.core import Gateway
from tests.acp.test_acp_runtime import WAIT, inbound, send
from tests.acp.test_acp_runtime import gateway as acp_gateway
from tests.conftest import ROOT
from tests.recorder import Recorder

TEMPLATE = ROOT / "examples" / "acp_agent.py"


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    async with acp_gateway(tmp_path, agent=TEMPLATE) as gw:
        yield gw


async def test_its_command_is_in_the_menu_and_runs(gateway: Gateway) -> None:
    commands = await gateway.commands("test", "c1")
    assert (
        Command(
            name="count",
            description="Count up to a number, one line at a time",
            hint="number",
            source="runtime",
        )
        in commands
    )
    assert (await send(gateway, "/count 2")).text == "1\n2\n"
    assert (await send(gateway, "/count x")).text == "usage: /count <number>"
    assert (await send(gateway, "hello there")).text == "You said: hello there"


async def test_cancel_stops_its_turn(gateway: Gateway) -> None:
    sink = Recorder()
    turn = asyncio.ensure_future(gateway.handle(inbound("/count 99"), sink))
    await asyncio.wait_for(sink.first_delta.wait(), WAIT)
    assert (await send(gateway, "/cancel")).text == "Cancelled the running turn."
    await asyncio.wait_for(turn, WAIT)
    assert sink.reply is not None and sink.reply.stop_reason == "cancelled"
    assert sink.text.startswith("1\n") and sink.text.endswith("_(cancelled)_")
