"""Agents that bend ACP (tests/acp/bent_agent.py, as claude-agent-acp 0.23 does): updates out of
the protocol's shape are read for what they hold, and a retry after a cancel that the agent never
answers ends within the cancel grace, in a session opened again.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic import SecretStr

from gateway.core import Gateway
from gateway.events import UsageReported
from gateway.runtimes.acp.lenient import read_update
from tests.acp.running import WAIT, inbound, send, started
from tests.conftest import make_settings
from tests.recorder import Recorder

BENT = Path(__file__).with_name("bent_agent.py")
SHAPE = "out of the protocol's shape"


@asynccontextmanager
async def bent(tmp_path: Path) -> AsyncIterator[tuple[Gateway, Path]]:
    """A gateway on the bent agent, which records its requests in the file yielded."""
    record = tmp_path / "requests"
    settings = make_settings(
        runtime="acp",
        acp_command=[sys.executable, str(BENT)],
        acp_cwd=tmp_path,
        acp_env={"BENT_RECORD": SecretStr(str(record))},
        cancel_grace=0.5,  # the retry's bound: the test waits that long for the silent one
        run_timeout=30.0,
    )
    async with started(settings) as gw:
        yield gw, record


async def test_usage_with_used_null_keeps_the_rest_and_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with bent(tmp_path) as (gw, _):
        first, second = await send(gw, "hi"), await send(gw, "there")
    assert first.text == "echo: hi" and second.text == "echo: there"
    # used: null is unknown; the size and the cost of the same update are kept.
    usage = UsageReported(context_size=200000, cost=0.01, currency="USD")
    assert first.reply is not None and first.reply.usage == usage
    assert [r.levelname for r in caplog.records if r.levelno >= logging.ERROR] == []
    faults = [r.getMessage() for r in caplog.records if SHAPE in r.getMessage()]
    assert len(faults) == 1, faults  # once for the agent's process, not once a turn
    assert "update.usage_update.used" in faults[0]


async def test_a_retry_the_agent_never_answers_ends_in_a_session_opened_again(
    tmp_path: Path,
) -> None:
    async with bent(tmp_path) as (gw, record):
        held = Recorder()
        turn = asyncio.ensure_future(gw.handle(inbound("hold"), held))
        await asyncio.wait_for(held.first_delta.wait(), WAIT)
        assert (await send(gw, "/cancel")).text == "Cancelled the running turn."
        await asyncio.wait_for(turn, WAIT)
        # The empty answer, the retry left silent, then a real answer from a new session.
        assert (await send(gw, "hello")).text == "echo: hello"
        assert (await send(gw, "again")).text == "echo: again"
    assert record.read_text().splitlines() == [
        "new bent-1",
        "prompt bent-1 hold",
        "cancel bent-1",
        "prompt bent-1 hello",
        "prompt bent-1 hello",
        "cancel bent-1",
        "new bent-2",
        "prompt bent-2 hello",
        "prompt bent-2 again",
    ]


def test_read_update_keeps_what_is_valid() -> None:
    usage = {"sessionUpdate": "usage_update", "used": None, "size": 10, "cost": "much"}
    read = read_update({"sessionId": "s", "update": usage})
    assert read.session_id == "s" and (read.update.used, read.update.size) == (None, 10)
    assert read.update.cost is None  # an optional field out of shape: its default
    # A required field that is not a count: nothing of the update is usable.
    tool = read_update({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "title": 3}})
    assert tool.update is None and tool.faults
    assert read_update({"sessionId": "s", "update": {"sessionUpdate": "new_kind"}}).update is None
    assert read_update({"update": usage}).session_id is None
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}}
    fine = read_update({"sessionId": "s", "update": chunk})
    assert fine.faults == () and fine.update.content.text == "a"
