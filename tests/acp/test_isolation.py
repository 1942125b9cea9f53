"""Isolation with real ACP agent processes (tests/acp/agent.py) that misbehave: a session/new
that is never answered delays no other conversation, and ending an agent ends everything it
started (its process group), also when it ignores SIGTERM or runs as a relaunched copy.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import aiohttp

from gateway.inbound import Reply
from gateway.runtimes.stdio import pid_exited as ended
from tests.acp.test_acp_runtime import AGENT, WAIT, gateway, inbound, names, send
from tests.processes import (
    group,
    log_line,
    reply_of,
    reported_pids,
    running,
    serving,
    terminate,
)
from tests.recorder import Recorder

TIMEOUT_TEXT = "The request timed out. Retry in a moment."


async def test_a_stuck_session_new_holds_up_only_its_own_conversation(tmp_path: Path) -> None:
    # The agent never answers its 2nd session/new: the healthy conversation opens first.
    with log_line("slashgate.acp", "session/new 2: never answering") as stuck_open:
        async with gateway(
            tmp_path,
            acp_env={"ACP_TEST_STUCK_NEW": "2"},
            run_timeout=4.0,
            open_timeout=4.0,
            inventory_wait=1.0,
        ) as gw:
            assert (await send(gw, "hello", "healthy")).text == "echo: text:hello"
            stuck_sink = Recorder()
            stuck = asyncio.ensure_future(gw.handle(inbound("hello", "stuck"), stuck_sink))
            await asyncio.wait_for(stuck_open.seen.wait(), WAIT)

            # Meanwhile the healthy conversation notices nothing.
            helped = await send(gw, "/help", "healthy")
            assert "`/web <query>` — Search the web" in helped.text
            assert (await send(gw, "/web now", "healthy")).text == "results for now"
            assert "memory show" in names(await gw.commands("test", "healthy"))
            # The stuck conversation's listing comes after the inventory wait, not the open:
            # the gateway's commands and the agent's as last reported.
            listed = names(await asyncio.wait_for(gw.commands("test", "stuck"), WAIT))
            assert "help" in listed and "web" in listed
            assert not stuck.done()

            # Its user gets the timeout text, once.
            await asyncio.wait_for(stuck, WAIT)
            assert stuck_sink.finals == [Reply(TIMEOUT_TEXT, "timeout", None, slash=False)]
            # The open was given up with it: the next input opens a session again.
            assert (await send(gw, "hello again", "stuck")).text == "echo: text:hello again"


async def test_gateway_commands_do_not_wait_for_an_agent_that_opens_no_session(
    tmp_path: Path,
) -> None:
    # As pi-acp 0.0.34: no session/new is ever answered. Nothing here may wait for one: the
    # waits are long enough that a test that did would fail.
    patient = WAIT * 10
    with log_line("slashgate.acp", "session/new 1: never answering") as stuck_open:
        async with gateway(
            tmp_path,
            acp_env={"ACP_TEST_STUCK_NEW": "all"},
            inventory_wait=patient,
            open_timeout=patient,
            run_timeout=patient,
        ) as gw:
            sink = Recorder()
            waiting = asyncio.ensure_future(gw.handle(inbound("hello", "c1"), sink))
            await asyncio.wait_for(stuck_open.seen.wait(), WAIT)
            helped = await send(gw, "/help", "c2")
            assert helped.text.startswith("**Gateway commands**")
            assert "- none reported yet" in helped.text
            assert (await send(gw, "/status", "c1")).text.startswith("**Session:** idle")
            assert not waiting.done()
        # Shutdown ends the wait: one reply.
        await asyncio.wait_for(waiting, WAIT)
        assert sink.finals == [
            Reply("The request failed: the gateway is shutting down", "generic", slash=False)
        ]


async def test_cancel_stops_a_turn_still_waiting_for_its_session(tmp_path: Path) -> None:
    with log_line("slashgate.core", "test:c1 is still opening") as waiting:
        async with gateway(tmp_path, acp_env={"ACP_TEST_STUCK_NEW": "1"}, inventory_wait=0.5) as gw:
            sink = Recorder()
            turn = asyncio.ensure_future(gw.handle(inbound("hello"), sink))
            await asyncio.wait_for(waiting.seen.wait(), WAIT)  # its turn waits for the session
            cancel = await send(gw, "/cancel")
            assert cancel.text == "Cancelled the running turn."
            await asyncio.wait_for(turn, WAIT)
            assert sink.finals == [Reply("_(cancelled)_", None, "cancelled", slash=False)]


async def test_new_in_a_stuck_conversation_starts_over_at_once(tmp_path: Path) -> None:
    with log_line("slashgate.core", "test:c1 is still opening") as waiting:
        async with gateway(tmp_path, acp_env={"ACP_TEST_STUCK_NEW": "1"}, inventory_wait=0.5) as gw:
            sink = Recorder()
            turn = asyncio.ensure_future(gw.handle(inbound("hello"), sink))
            await asyncio.wait_for(waiting.seen.wait(), WAIT)
            new = await send(gw, "/new")
            assert new.text == "Started a new session. The running turn was cancelled."
            await asyncio.wait_for(turn, WAIT)
            assert sink.finals == [Reply("_(cancelled)_", None, "cancelled", slash=False)]
            # The stuck open was dropped: this one is the agent's 2nd session/new, answered.
            assert (await send(gw, "hello")).text == "echo: text:hello"


async def test_stop_ends_an_agent_that_ignores_sigterm_and_its_child(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_STUBBORN": "1"}) as gw:
        agent, _, child = reported_pids((await send(gw, "pids")).text)
        assert sorted(group(agent)) == sorted([agent, child])
    # Stopped: SIGTERM to the group went unheeded, SIGKILL followed.
    await asyncio.wait_for(ended(child), WAIT)
    assert not running(agent) and group(agent) == []


async def test_a_crashed_agent_leaves_nothing_behind(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_STUBBORN": "1"}) as gw:
        agent, _, child = reported_pids((await send(gw, "pids")).text)
        crashed = await send(gw, "crash")
        # Its child holds the agent's stdout: the turn ends when the group is ended.
        assert crashed.reply is not None and crashed.reply.category == "generic"
        await asyncio.wait_for(ended(child), WAIT)
        assert group(agent) == []
        restarted = reported_pids((await send(gw, "pids")).text)
        assert restarted[0] != agent and running(restarted[0])


async def test_stop_ends_a_relaunched_agent_and_its_launcher(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_REEXEC": "1"}) as gw:
        agent, launcher = reported_pids((await send(gw, "pids")).text)
        assert sorted(group(launcher)) == sorted([launcher, agent])
    await asyncio.wait_for(ended(agent), WAIT)
    assert not running(launcher) and group(launcher) == []


async def test_sigterm_with_a_stuck_agent_exits_within_the_grace(tmp_path: Path) -> None:
    grace = 1.0
    agent_env = {"ACP_TEST_STUCK_NEW": "1", "ACP_TEST_STUBBORN": "1"}
    settings = {
        "SLASHGATE_RUNTIME": "acp",
        "SLASHGATE_ACP_COMMAND": json.dumps([sys.executable, str(AGENT)]),
        "SLASHGATE_ACP_CWD": str(tmp_path),
        "SLASHGATE_ACP_ENV": json.dumps(agent_env),
        "SLASHGATE_CANCEL_GRACE": str(grace),
        "SLASHGATE_INVENTORY_WAIT": str(WAIT),  # the input still waits for its session
    }
    async with serving(settings, WAIT) as served, aiohttp.ClientSession() as http:
        agent, _, child = reported_pids((await served.logged(" stderr: pids ")).split("pids ")[1])
        body = {"conversation": "stuck", "user": "u", "text": "hello"}
        posted = asyncio.ensure_future(http.post(f"{served.url}/v1/messages", json=body))
        await asyncio.wait_for(served.logged("session/new 1: never answering"), WAIT)

        # The agent and its child ignore SIGTERM: half a second of it is the kill grace
        # (before, it took over a minute).
        code, elapsed = await terminate(served, WAIT)
        assert code == 0 and elapsed < grace + 2, (code, elapsed)
        # The user whose input waited for the session got one answer before the exit.
        reply = await reply_of(posted, WAIT)
        assert reply["text"] == "The request failed: the gateway is shutting down"
    await asyncio.wait_for(ended(child), WAIT)
    assert not running(agent) and group(agent) == []
