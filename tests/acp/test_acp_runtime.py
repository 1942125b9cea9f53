"""The ACP runtime against a real ACP agent in a subprocess (tests/acp/agent.py, same SDK)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from contract import Command, ComposerInputMessage, ComposerInputPayload
from gateway.core import Gateway
from gateway.events import (
    MessageDelta,
    MessageEnd,
    PermissionRequired,
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)
from gateway.inbound import Reply
from gateway.runtimes import Turn
from slashgate.config import ConfigError, load_settings
from slashgate.registry import build_runtime
from tests.acp.prompts import AGENT, agent_settings, prompts
from tests.acp.running import WAIT, inbound, send, started
from tests.conftest import make_settings
from tests.recorder import Recorder


def acp_settings(tmp_path: Path, agent: Path = AGENT, **overrides: Any) -> Any:
    env = overrides.pop("acp_env", {})
    return make_settings(**agent_settings(tmp_path, env, agent), **overrides)


@asynccontextmanager
async def gateway(tmp_path: Path, **overrides: Any) -> AsyncIterator[Gateway]:
    async with started(acp_settings(tmp_path, **overrides)) as gw:
        yield gw


def names(commands: tuple[Command, ...]) -> list[str]:
    return [c.name for c in commands]


async def test_commands_from_before_and_after_the_session_new_reply(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        menus: list[tuple[Command, ...]] = []
        late = asyncio.Event()

        def listener(key: str, menu: tuple[Command, ...]) -> None:
            menus.append(menu)
            if key == "test:c1" and "review" in names(menu):
                late.set()

        gw.subscribe_conversation(listener)
        # The list sent before the session/new reply is there as soon as the session is.
        first = await gw.commands("test", "c1")
        assert "web" in names(first) and "memory show" in names(first)
        assert "review" not in names(first)
        web = next(c for c in first if c.name == "web")
        assert web.hint == "query" and web.description == "Search the web"

        await asyncio.wait_for(late.wait(), WAIT)
        sink = await send(gw, "/review 42")
        assert sink.reply is not None and sink.reply.text == "reviewing 42"


async def test_an_empty_first_list_is_not_taken_as_final(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_EMPTY_FIRST": "1"}) as gw:
        # The gateway waited (bounded) past the empty list for the real one.
        sink = await send(gw, "/review 7")
        assert sink.text == "reviewing 7"


async def test_command_sent_by_canonical_name_and_multi_word_names(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = await send(gw, "/WEB@gw_bot acp sdk", bot="gw_bot")
        assert sink.reply == Reply("results for acp sdk", None, "end_turn", slash=True)
        assert sink.deltas == ["results ", "for ", "acp sdk"]

        # One space between the name and the arguments, whatever the user typed.
        for typed in ("/Memory Show all", "/memory   SHOW   all", "/memory show\tall"):
            sink = await send(gw, typed)
            assert sink.text == "memory: '/memory show all'", typed
        sink = await send(gw, "/memory show")
        assert sink.text == "memory: '/memory show'"

        sink = await send(gw, "/nope")
        assert sink.reply is not None and sink.reply.category == "unsupported"


async def test_chunks_arrive_in_the_agent_order(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = await send(gw, "burst")
        expected = [f"{i} " for i in range(200)]
        assert sink.deltas == expected
        assert sink.reply is not None and sink.reply.text == "".join(expected)


async def test_tool_call_behind_an_allowed_permission(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = Recorder()
        turn = asyncio.ensure_future(gw.handle(inbound("tool"), sink))
        request = await asyncio.wait_for(sink.permission, WAIT)
        assert request.title == "Delete build/"
        assert [(o.option_id, o.kind) for o in request.options] == [
            ("allow", "allow_once"),
            ("reject", "reject_once"),
        ]
        assert await gw.answer_permission("test", "c1", request.request_id, "allow")
        await asyncio.wait_for(turn, WAIT)
        assert sink.reply is not None and sink.reply.text == "tool ran"
        tools = [e for e in sink.events if not isinstance(e, PermissionRequired)]
        assert tools == [
            ToolStart("call-1", "Delete build/", "delete"),
            StatusChanged("waiting_for_permission", "Delete build/"),
            ToolRunning("call-1", None),
            ToolEnd("call-1", "completed", "deleted 3 files"),
        ]
        # Answered once: a second answer finds nothing pending.
        assert not await gw.answer_permission("test", "c1", request.request_id, "allow")


async def test_rejected_permission_and_unknown_option(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = Recorder()
        turn = asyncio.ensure_future(gw.handle(inbound("tool"), sink))
        request = await asyncio.wait_for(sink.permission, WAIT)
        assert not await gw.answer_permission("test", "c1", request.request_id, "not-offered")
        assert await gw.answer_permission("test", "c1", request.request_id, "reject")
        await asyncio.wait_for(turn, WAIT)
        assert sink.reply is not None and sink.reply.text == "tool refused"
        assert ToolEnd("call-1", "failed", None) in sink.events


async def test_cancel_answers_a_pending_permission_cancelled(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = Recorder()
        turn = asyncio.ensure_future(gw.handle(inbound("tool"), sink))
        request = await asyncio.wait_for(sink.permission, WAIT)
        cancel = await send(gw, "/cancel")
        assert cancel.reply is not None and cancel.reply.text == "Cancelled the running turn."
        await asyncio.wait_for(turn, WAIT)
        assert sink.reply is not None
        assert sink.reply.stop_reason == "cancelled" and sink.reply.text == "_(cancelled)_"
        assert not await gw.answer_permission("test", "c1", request.request_id, "allow")


async def test_cancel_sends_session_cancel_and_the_next_message_works(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = Recorder()
        turn = asyncio.ensure_future(gw.handle(inbound("hold"), sink))
        await asyncio.wait_for(sink.first_delta.wait(), WAIT)
        await send(gw, "/cancel")
        await asyncio.wait_for(turn, WAIT)
        assert sink.reply == Reply("working\n\n_(cancelled)_", None, "cancelled", slash=False)
        after = await send(gw, "hello")
        assert after.reply is not None and after.reply.text == "echo: text:hello"


async def test_deadline_cancels_the_turn_in_the_agent(tmp_path: Path) -> None:
    async with gateway(tmp_path, run_timeout=0.5) as gw:
        sink = await send(gw, "hold")
        assert sink.reply is not None and sink.reply.category == "timeout"
        assert sink.reply.text == "The request timed out. Retry in a moment."
        # The agent got session/cancel and stopped: the next turn is not stuck behind it.
        after = await send(gw, "cancels")
        assert after.text == "cancels=1"


async def test_stop_leaves_no_task_behind(tmp_path: Path) -> None:
    runtime = build_runtime(acp_settings(tmp_path))
    async with asyncio.timeout(WAIT):
        await runtime.start()
    try:
        session = await runtime.open("test:c1", lambda update: None)
        payload = ComposerInputPayload(source="noisy")  # stderr to drain, too
        turn = Turn(ComposerInputMessage(payload=payload), None, "", "alice")
        async with asyncio.timeout(WAIT):
            events = [event async for event in session.run(turn)]
        assert events == [MessageDelta("quiet now"), MessageEnd("end_turn")]
    finally:
        async with asyncio.timeout(WAIT):  # no task of its own, unlike wait_for
            await runtime.stop()
    # Right after stop: no stderr drain or exit watcher still pending, which would be
    # "Task was destroyed but it is pending!" if the loop closed now.
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_crash_mid_turn_is_one_generic_failure_then_the_agent_restarts(
    tmp_path: Path,
) -> None:
    async with gateway(tmp_path) as gw:
        sink = await send(gw, "crash")
        assert sink.deltas == ["about to crash"]
        assert sink.reply is not None and sink.reply.category == "generic"
        assert sink.reply.text == (
            "The request failed: the agent process stopped; it is restarted for the next message"
        )
        after = await send(gw, "/web again")
        assert after.reply is not None and after.reply.text == "results for again"
        assert "acp (test-agent 1.0)" in (await send(gw, "/status")).reply.text  # type: ignore[union-attr]


async def test_modes_through_the_host_mode_command(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        assert "mode" in names(await gw.commands("test", "c1"))
        shown = await send(gw, "/mode")
        assert shown.reply is not None
        assert shown.reply.text == "Current mode: `ask`. Available: `ask`, `code`."
        switched = await send(gw, "/mode CODE")
        assert switched.reply is not None and switched.reply.text == "Mode set to `code`."
        asked = await send(gw, "mode")
        assert asked.reply is not None and asked.reply.text == "mode=code"


async def test_stop_reasons_plan_and_withdrawn_commands(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        refused = await send(gw, "refuse")
        assert refused.reply == Reply(
            "_(the agent declined to answer)_", None, "refusal", slash=False
        )

        planned = await send(gw, "plan")
        assert planned.reply is not None and planned.reply.text == "planned"
        assert PlanUpdated((PlanEntry("read", "completed"), PlanEntry("write"))) in planned.events

        withdrawn = await send(gw, "withdraw")
        assert withdrawn.reply is not None and withdrawn.reply.text == "withdrawn"
        assert "web" not in names(await gw.commands("test", "c1"))
        rejected = await send(gw, "/web x")
        assert rejected.reply is not None and rejected.reply.category == "unsupported"


async def test_prompt_lowering_file_nodes_become_resource_links(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = await send(gw, "look at @file:src/a.py please")
        uri = (tmp_path / "src" / "a.py").resolve().as_uri()
        assert sink.reply is not None
        assert sink.reply.text == f"echo: text:look at  | link:src/a.py:{uri} | text: please"


async def test_stderr_is_drained_and_the_environment_is_explicit(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_SECRET": "s3cret"}) as gw:
        noisy = await send(gw, "noisy")  # 1 MiB on stderr: a pipe nobody reads would block
        assert noisy.reply is not None and noisy.reply.text == "quiet now"
        env = await send(gw, "env")
        assert env.reply is not None and env.reply.text == "secret=s3cret"


async def test_agent_environment_is_secret_except_to_the_agent(tmp_path: Path) -> None:
    config = tmp_path / "slashgate.toml"
    config.write_text(
        f'runtime = "acp"\ninventory_wait = 2\n'
        f"[acp]\ncommand = {json.dumps([sys.executable, str(AGENT)])}\n"
        f"cwd = {json.dumps(str(tmp_path))}\n"
        '[acp.env]\nACP_TEST_SECRET = "s3cret"\n[pi.env]\nPI_KEY = "p1-key"\n'
    )
    settings = load_settings(config)
    assert "s3cret" not in repr(settings) and "p1-key" not in repr(settings)
    # Nor in the text of a configuration error, which quoted the whole input before.
    with config.open("a") as fh:
        fh.write('[telegram]\ntoken = "123:abc"\nmode = "webhook"\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert "[telegram] secret is not set" in str(refused.value)  # as the file spells it
    assert "s3cret" not in str(refused.value) and "123:abc" not in str(refused.value)
    # The agent itself gets it in clear.
    gw = Gateway(settings, build_runtime(settings))
    await asyncio.wait_for(gw.start(), WAIT)
    try:
        assert (await send(gw, "env")).text == "secret=s3cret"
    finally:
        await asyncio.wait_for(gw.stop(), WAIT)


async def test_authenticate_when_session_new_requires_it(tmp_path: Path) -> None:
    async with gateway(
        tmp_path, acp_env={"ACP_TEST_AUTH": "1"}, acp_auth_method="test-token"
    ) as gw:
        sink = await send(gw, "hello")
        assert sink.reply is not None and sink.reply.text == "echo: text:hello"


async def test_auth_required_without_a_method_is_one_clear_failure(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_AUTH": "1"}, inventory_wait=0.1) as gw:
        sink = await send(gw, "hello")
        assert sink.reply is not None and sink.reply.category == "generic"
        assert "set acp_auth_method to one of ['test-token']" in sink.reply.text


async def test_through_the_webhook_channel(tmp_path: Path, gateway_server: Any) -> None:
    settings = acp_settings(tmp_path)
    async with gateway_server(build_runtime(settings)) as server, aiohttp.ClientSession() as http:
        body = {"conversation": "w1", "user": "bob", "text": "/web slashgate"}
        async with http.post(f"{server.url}/v1/messages", json=body) as response:
            assert response.status == 200
            data = await response.json()
        assert data["reply"] == {
            "text": "results for slashgate",
            "category": None,
            "stop_reason": "end_turn",
        }
        async with http.get(f"{server.url}/v1/agent") as response:  # as the agent calls itself
            assert await response.json() == {
                "name": "test-agent",
                "runtime": "acp",
                "version": "1.0",
                "description": "",
            }


def test_an_empty_command_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="acp_command is empty"):
        build_runtime(make_settings(runtime="acp", acp_command=[]))


async def test_thoughts_plans_tools_and_usage_of_a_working_turn(tmp_path: Path) -> None:
    async with gateway(tmp_path) as gw:
        sink = await send(gw, "work")
        assert sink.events == [
            ReasoningDelta("The user wants "),
            ReasoningDelta("the tests run."),
            PlanUpdated((PlanEntry("Read the code"), PlanEntry("Run the tests"))),
            ToolStart("t1", "Read app.py", "read"),
            ToolRunning("t1", "Read app.py"),
            ToolEnd("t1", "completed", "42"),
            PlanUpdated(
                (PlanEntry("Read the code", "completed"), PlanEntry("Run the tests", "in_progress"))
            ),
            ToolStart("t2", "Run pytest", "execute"),
            ToolEnd("t2", "failed", None),
            UsageReported(context_used=1200, context_size=200000),
            UsageReported(input_tokens=1000, output_tokens=234, total_tokens=1234),
        ]
        # The reply carries the turn's usage, both reports merged.
        assert sink.reply is not None and sink.reply.text == "worked"
        assert sink.reply.usage == UsageReported(
            input_tokens=1000,
            output_tokens=234,
            total_tokens=1234,
            context_used=1200,
            context_size=200000,
        )
        status = await send(gw, "/status")
        assert "**Model:** test-model-large" in status.text


async def test_an_agent_command_named_like_a_gateway_command(tmp_path: Path) -> None:
    async with gateway(tmp_path, acp_env={"ACP_TEST_CLASH": "1"}) as gw:
        listed = await gw.commands("test", "c1")
        # One entry per name: the gateway keeps /help and /status, the agent's are aliased.
        assert names(listed).count("help") == 1 and names(listed).count("status") == 1
        assert {"agent-help", "agent-status", "tool"} <= set(names(listed))
        alias = next(c for c in listed if c.name == "agent-help")
        assert alias.description == "The agent's help (the agent's /help)"

        help_text = (await send(gw, "/help")).text
        assert "`/tool <tool-name>` — Describe a tool" in help_text  # the hint bracketed once
        assert help_text.count("`/help`") == 1 and "`/agent-help`" in help_text

        # The gateway's /status runs; the agent's is reached by its alias, as its own name.
        assert (await send(gw, "/status")).text.startswith("**Session:**")
        sink = await send(gw, "/agent-status all")
        assert sink.text == "agent's own /status all"
        assert sink.reply is not None and sink.reply.slash


async def _cancel_a_turn(gw: Gateway) -> None:
    sink = Recorder()
    turn = asyncio.ensure_future(gw.handle(inbound("hold"), sink))
    await asyncio.wait_for(sink.first_delta.wait(), WAIT)
    assert (await send(gw, "/cancel")).text == "Cancelled the running turn."
    await asyncio.wait_for(turn, WAIT)


async def test_an_empty_answer_right_after_a_cancel_is_asked_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """claude-agent-acp answers the first prompt after a cancel with an empty end_turn: the
    gateway sends it once more by itself, and the user gets the real reply.
    """
    record = tmp_path / "prompts.jsonl"
    env = {"ACP_TEST_EMPTY_AFTER_CANCEL": "1", "ACP_TEST_RECORD": str(record)}
    async with gateway(tmp_path, acp_env=env) as gw:
        await _cancel_a_turn(gw)
        after = await send(gw, "hello")
        assert after.finals == [Reply("echo: text:hello", None, "end_turn", slash=False)]
        assert (await send(gw, "again")).text == "echo: text:again"
    texts = [[b["text"] for b in blocks] for blocks in prompts(record)]
    assert texts == [["hold"], ["hello"], ["hello"], ["again"]]  # once more, only once
    assert "after a cancel in test:c1 with nothing: sending it once more" in caplog.text


async def test_a_second_empty_answer_after_a_cancel_says_so_once(tmp_path: Path) -> None:
    record = tmp_path / "prompts.jsonl"
    env = {"ACP_TEST_EMPTY_AFTER_CANCEL": "2", "ACP_TEST_RECORD": str(record)}
    async with gateway(tmp_path, acp_env=env) as gw:
        await _cancel_a_turn(gw)
        after = await send(gw, "/web q")
        assert len(after.finals) == 1 and after.finals[0].text.startswith(
            "The agent returned nothing"
        )
        assert (await send(gw, "hello")).text == "echo: text:hello"
    texts = [[b["text"] for b in blocks] for blocks in prompts(record)]
    assert texts == [["hold"], ["/web q"], ["/web q"], ["hello"]]


async def test_a_conversation_goes_on_in_its_session_after_a_restart(tmp_path: Path) -> None:
    """With ``loadSession`` offered, a restarted gateway (and a restarted agent) loads the
    conversation's session instead of starting a new one; ``/new`` starts afresh for good.
    """
    durable = {
        "store": "sqlite",
        "state_path": tmp_path / "state.sqlite3",
        "acp_env": {"ACP_TEST_SESSIONS": str(tmp_path / "sessions")},
    }
    async with gateway(tmp_path, **durable) as gw:
        first = (await send(gw, "whoami")).finals[0].text
    assert first.startswith("session=sess-")
    async with gateway(tmp_path, **durable) as gw:
        assert (await send(gw, "whoami")).finals[0].text == first
        assert (await send(gw, "whoami", conversation="c2")).finals[0].text != first
        await send(gw, "/new")
        after_new = (await send(gw, "whoami")).finals[0].text
    assert after_new != first
    async with gateway(tmp_path, **durable) as gw:
        assert (await send(gw, "whoami")).finals[0].text == after_new


async def test_a_session_the_agent_no_longer_knows_is_replaced(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    durable = {
        "store": "sqlite",
        "state_path": tmp_path / "state.sqlite3",
        "acp_env": {"ACP_TEST_SESSIONS": str(sessions)},
    }
    async with gateway(tmp_path, **durable) as gw:
        first = (await send(gw, "whoami")).finals[0].text
    sessions.write_text("")  # the agent lost its sessions
    async with gateway(tmp_path, **durable) as gw:
        again = (await send(gw, "whoami")).finals[0].text
    assert again.startswith("session=sess-") and again != first
