"""The pi runtime against the real ``pi`` CLI (npm: @mariozechner/pi-coding-agent), run offline.

pi gets an isolated HOME holding an extension with commands, a prompt template and a skill, and
a local OpenAI-compatible endpoint as its model (tests/pi/mock_openai.py). scripts/install-pi.sh
installs pi under .tools/pi; without node, or when that install failed (no npm registry), these
tests skip with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import shutil
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from contract import Command
from gateway.core import Gateway
from gateway.events import ToolEnd, ToolStart, UsageReported
from gateway.inbound import Attachment, InboundMessage
from gateway.runtimes.pi.runtime import PiRuntime
from slashgate.registry import build_runtime
from tests.conftest import make_settings
from tests.pi.logs import LogSeen
from tests.pi.mock_openai import MODEL, MockModel, serve
from tests.recorder import Recorder

ROOT = Path(__file__).resolve().parents[2]
LOCAL_PI = ROOT / ".tools" / "pi" / "node_modules" / ".bin" / "pi"
WAIT = 30.0

INSTALL_FAILED = ROOT / ".tools" / "pi" / "install-failed"  # written by scripts/install-pi.sh


def _why_no_pi() -> str | None:
    """Why the real pi cannot run here; None when it can."""
    if shutil.which("node") is None:
        return "node is not installed: the pi tests run the real pi CLI"
    if LOCAL_PI.exists() or shutil.which("pi") is not None:
        return None
    if INSTALL_FAILED.exists():
        return "pi is not installed: " + INSTALL_FAILED.read_text(encoding="utf-8").strip()
    return "pi is not installed: run scripts/install-pi.sh (make test does)"


pytestmark = pytest.mark.skipif(_why_no_pi() is not None, reason=_why_no_pi() or "")

EXTENSION = """
export default function (pi) {
  pi.registerCommand("hello", {
    description: "Say hello",
    handler: async (args, ctx) => { ctx.ui.notify(`Hello ${args || "world"}!`, "info"); },
  });
  pi.registerCommand("Shout", {
    description: "Shout the text back",
    handler: async (args, ctx) => { ctx.ui.notify(args.toUpperCase(), "info"); },
  });
  pi.registerCommand("ask", {
    description: "Ask before deploying",
    handler: async (args, ctx) => {
      const ok = await ctx.ui.confirm("Deploy?", "to production");
      ctx.ui.notify(ok ? "deployed" : "not deployed", "info");
    },
  });
  pi.registerCommand("boom", {
    description: "Fail on purpose",
    handler: async () => { throw new Error("boom went the extension"); },
  });
}
"""
TEMPLATE = "---\ndescription: Review code\n---\nReview $1 carefully.\n"
SKILL = "---\nname: triage\ndescription: Triage an issue\n---\nTriage steps here.\n"


def pi_binary() -> str:
    found = str(LOCAL_PI) if LOCAL_PI.exists() else shutil.which("pi")
    assert found is not None  # the module skips otherwise
    return found


def relative_to_here(path: str) -> str:
    return os.path.relpath(path)


def pi_home(root: Path, model: MockModel, inputs: tuple[str, ...] = ("text",)) -> Path:
    """An isolated HOME: pi's settings, models, an extension, a prompt template and a skill.
    ``inputs`` is what the model reads (``image`` too for a vision model).
    """
    home = root / "home"
    agent = home / ".pi" / "agent"
    for sub in ("extensions", "prompts", "skills/triage"):
        (agent / sub).mkdir(parents=True, exist_ok=True)  # a restarted gateway: same HOME
    (agent / "extensions" / "commands.ts").write_text(EXTENSION)
    (agent / "prompts" / "review.md").write_text(TEMPLATE)
    (agent / "skills" / "triage" / "SKILL.md").write_text(SKILL)
    provider = {
        "baseUrl": model.url,
        "api": "openai-completions",
        "apiKey": "local",
        "models": [{"id": MODEL, "input": list(inputs)}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"mock": provider}}))
    settings = {"defaultProvider": "mock", "defaultModel": MODEL, "quietStartup": True}
    (agent / "settings.json").write_text(json.dumps(settings))
    return home


@asynccontextmanager
async def pi_gateway(
    tmp_path: Path, inputs: tuple[str, ...] = ("text",), **overrides: Any
) -> AsyncIterator[tuple[Gateway, MockModel]]:
    async with serve() as model:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        (work / "notes.txt").write_text("hi from notes")
        command = overrides.pop("pi_command", [pi_binary(), "--mode", "rpc"])
        # pi starts within the inventory wait (it counts from the start of the session's
        # open), however loaded the machine: the tests are about what comes after.
        overrides.setdefault("inventory_wait", WAIT / 3)
        settings = make_settings(
            runtime="pi",
            pi_command=command,
            pi_cwd=work,
            pi_env={
                "HOME": SecretStr(str(pi_home(tmp_path, model, inputs))),
                "PI_OFFLINE": SecretStr("1"),
            },
            **overrides,
        )
        gw = Gateway(settings, build_runtime(settings))
        await asyncio.wait_for(gw.start(), WAIT)
        try:
            yield gw, model
        finally:
            await asyncio.wait_for(gw.stop(), WAIT)


async def send(
    gw: Gateway, text: str, conversation: str = "c1", files: tuple[Attachment, ...] = ()
) -> Recorder:
    sink = Recorder()
    message = InboundMessage("test", conversation, "alice", text, attachments=files)
    await asyncio.wait_for(gw.handle(message, sink), WAIT)
    return sink


def start(gw: Gateway, text: str, conversation: str = "c1") -> tuple[Recorder, asyncio.Future[Any]]:
    sink = Recorder()
    return sink, asyncio.ensure_future(
        gw.handle(InboundMessage("test", conversation, "alice", text), sink)
    )


def by_name(commands: tuple[Command, ...]) -> dict[str, str]:
    return {c.name: c.description for c in commands}


async def test_inventory_has_extension_commands_templates_and_skills(tmp_path: Path) -> None:
    # A program path relative to the gateway's directory works although pi runs elsewhere.
    relative = relative_to_here(pi_binary())
    async with pi_gateway(tmp_path, pi_command=[relative, "--mode", "rpc"]) as (gw, _):
        commands = by_name(await gw.commands("test", "c1"))
        assert commands["hello"] == "Say hello"
        assert commands["Shout"] == "Shout the text back"
        assert commands["review"] == "Review code"
        assert commands["skill:triage"] == "Triage an issue"
        assert "help" in commands  # the gateway's own, layered first


async def test_plain_text_streams_from_the_model(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        sink = await send(gw, "hello there")
        assert sink.text == "echo: hello there"
        assert len(sink.deltas) == 3 and "".join(sink.deltas) == sink.text
        assert sink.reply is not None and sink.reply.stop_reason == "end_turn"
        assert model.user_texts() == ["hello there"]


async def test_lines_split_on_lf_only(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, _):
        sink = await send(gw, "a\u2028b\u2029c")
        assert sink.text == "echo: a\u2028b\u2029c"


async def test_extension_commands_go_by_their_canonical_name(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        hello = await send(gw, "/HELLO Bob")
        assert hello.text == "Hello Bob!"
        shout = await send(gw, "/shout quiet please")  # pi itself would only know /Shout
        assert shout.text == "QUIET PLEASE"
        assert shout.reply is not None and shout.reply.slash
        assert model.requests == []  # handled by the extension, never sent to the model


async def test_prompt_templates_and_skills_expand_in_pi(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        review = await send(gw, "/Review a.py")
        assert review.text == "echo: Review a.py carefully."
        triage = await send(gw, "/skill:TRIAGE bug 5")
        sent = model.user_texts()[-1]
        assert sent.startswith('<skill name="triage"') and sent.endswith("bug 5")
        assert "Triage steps here." in sent
        assert triage.text == f"echo: {sent}"


async def test_tool_execution_events(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, _):
        sink = await send(gw, "[tool] read my notes")
        assert sink.text == "tool said: hi from notes"
        assert sink.events == [
            ToolStart("call_1", "read"),
            ToolEnd("call_1", "completed", "hi from notes"),
        ]


async def test_usage_the_model_reported_reaches_the_reply(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, _):
        sink = await send(gw, "[usage] count me")
        assert sink.text == "echo: [usage] count me"
        assert sink.reply is not None
        assert sink.reply.usage == UsageReported(12, 3, 15)
        # Nothing reported (the other replies): no usage at all, not zeros.
        assert (await send(gw, "hello")).reply.usage is None  # type: ignore[union-attr]
        status = (await send(gw, "/status")).text
        assert f"/{MODEL}" in status.partition("**Model:** ")[2]  # provider/model, from get_state


async def test_model_error_is_one_failure_message(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, _):
        sink = await send(gw, "[fail] please")
        assert sink.reply is not None and sink.reply.category == "generic"
        assert sink.text.startswith("The request failed: ")
        assert "model refused: bad request" in sink.text
        after = await send(gw, "still there?")
        assert after.text == "echo: still there?"


async def test_extension_error_is_the_command_failure(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, _):
        sink = await send(gw, "/boom")
        assert sink.reply is not None and sink.reply.category == "generic"
        assert sink.text == "Slash command /boom failed: boom went the extension"


async def test_extension_dialog_is_a_permission_request(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, _):
        sink, turn = start(gw, "/ask")
        request = await asyncio.wait_for(sink.permission, WAIT)
        assert request.title == "Deploy?\nto production"
        assert [o.option_id for o in request.options] == ["yes", "no"]
        assert await gw.answer_permission("test", "c1", request.request_id, "yes")
        await asyncio.wait_for(turn, WAIT)
        assert sink.text == "deployed"


async def test_cancel_aborts_and_the_next_message_works(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        sink, turn = start(gw, "[hold] take your time")
        await asyncio.wait_for(model.holding.wait(), WAIT)
        await asyncio.wait_for(sink.first_delta.wait(), WAIT)
        cancel = await send(gw, "/cancel")
        assert cancel.text == "Cancelled the running turn."
        await asyncio.wait_for(turn, WAIT)
        assert sink.text == "thinking\n\n_(cancelled)_"
        assert sink.reply is not None and sink.reply.stop_reason == "cancelled"
        after = await send(gw, "again")
        assert after.text == "echo: again"


async def test_pi_dying_mid_turn_is_one_failure_then_it_restarts(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        runtime = gw.runtime
        assert isinstance(runtime, PiRuntime)
        sink, turn = start(gw, "[hold] forever")
        await asyncio.wait_for(model.holding.wait(), WAIT)
        process = runtime.process_of("test:c1")
        assert process is not None and process.pid is not None
        os.kill(process.pid, signal.SIGKILL)
        await asyncio.wait_for(turn, WAIT)
        assert sink.reply is not None and sink.reply.category == "generic"
        assert (
            sink.text == "The request failed: pi stopped; it is started again for the next message"
        )
        after = await send(gw, "back?")
        assert after.text == "echo: back?"


async def test_bounded_pool_resumes_the_pi_session_in_a_new_process(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path, pi_pool_size=1) as (gw, model):
        runtime = gw.runtime
        assert isinstance(runtime, PiRuntime)
        assert (await send(gw, "first", "c1")).text == "echo: first"
        assert (await send(gw, "second", "c2")).text == "echo: second"
        assert runtime.processes == 1 and runtime.process_of("test:c1") is None
        assert (await send(gw, "third", "c1")).text == "echo: third"
        # c1's new process resumed its pi session: the model sees the earlier exchange.
        history = [m.get("content") for m in model.requests[-1]["messages"]]
        assert any("first" in json.dumps(c) for c in history)
        assert not any("second" in json.dumps(c) for c in history)


async def test_a_full_pool_of_busy_processes_is_busy(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path, pi_pool_size=1, inventory_wait=2.0) as (gw, model):
        sink, turn = start(gw, "[hold] busy", "c1")
        await asyncio.wait_for(model.holding.wait(), WAIT)
        other = await send(gw, "me too", "c2")
        assert other.reply is not None and other.reply.category == "busy"
        assert other.text == "The session is busy. Retry in a moment."
        model.released.set()
        await asyncio.wait_for(turn, WAIT)
        assert sink.reply is not None and sink.deltas[0] == "thinking"


async def test_idle_processes_are_reaped(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path, pi_idle_ttl=0.5) as (gw, _):
        runtime = gw.runtime
        assert isinstance(runtime, PiRuntime)
        assert (await send(gw, "hi")).text == "echo: hi"
        process = runtime.process_of("test:c1")
        assert process is not None
        await asyncio.wait_for(process.stopped.wait(), WAIT)
        assert runtime.processes == 0
        assert (await send(gw, "hi again")).text == "echo: hi again"


async def test_messages_while_idle_processes_are_being_stopped(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        runtime = gw.runtime
        assert isinstance(runtime, PiRuntime)
        assert (await send(gw, "one", "c1")).text == "echo: one"
        assert (await send(gw, "two", "c2")).text == "echo: two"
        slow = runtime.process_of("test:c1")
        assert slow is not None and slow.pid is not None
        # c1's pi cannot exit until it is continued: stopping it takes as long as the test needs.
        os.kill(slow.pid, signal.SIGSTOP)
        logger = logging.getLogger("slashgate.pi")
        stopping = LogSeen("pi for test:c1 idle")
        level = logger.level
        logger.setLevel(logging.INFO)
        logger.addHandler(stopping)
        try:
            reaping = asyncio.ensure_future(runtime.reap_idle(0))
            await asyncio.wait_for(stopping.seen.wait(), WAIT)
            # Both are idle and on their way out, c1's for seconds (until it is killed).
            # c1 gets a new process; the old one's exit, mid-turn, is no news to this turn.
            sink, turn = start(gw, "[hold] again", "c1")
            # c2's process is not stopped yet: a message to c2 gets a new one.
            assert (await send(gw, "still here?", "c2")).text == "echo: still here?"
            await asyncio.wait_for(model.holding.wait(), WAIT)
            with contextlib.suppress(ProcessLookupError):  # unless already killed
                os.kill(slow.pid, signal.SIGCONT)
            await asyncio.wait_for(slow.stopped.wait(), WAIT)
            model.released.set()
            await asyncio.wait_for(turn, WAIT)
            assert sink.reply is not None and sink.reply.category is None
            assert sink.deltas[0] == "thinking"
            await asyncio.wait_for(reaping, WAIT)
        finally:
            logger.removeHandler(stopping)
            logger.setLevel(level)
            with contextlib.suppress(ProcessLookupError):
                os.kill(slow.pid, signal.SIGCONT)


async def test_a_closed_process_leaves_no_reader_behind(tmp_path: Path) -> None:
    # pi's stderr outlives pi: a process it started (a tool's, say) still holds it open.
    holders = tmp_path / "holders.pid"  # one per pi started
    command = [
        "sh",
        "-c",
        'sleep 60 </dev/null >/dev/null & echo $! >> "$0"; exec "$1" --mode rpc',
        str(holders),
        pi_binary(),
    ]
    try:
        async with pi_gateway(tmp_path, pi_command=command) as (gw, _):
            runtime = gw.runtime
            assert isinstance(runtime, PiRuntime)
            assert (await send(gw, "hi")).text == "echo: hi"
            process = runtime.process_of("test:c1")
            assert process is not None
            async with asyncio.timeout(WAIT):  # no task of its own, unlike wait_for
                await process.close()
            # Right after close: neither its stdout reader nor its stderr drain is pending
            # (it would be "Task was destroyed but it is pending!" if the loop closed now).
            readers = {"PiProcess._read", "StderrPipe.drain"}
            assert not [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ in readers]  # type: ignore[union-attr]
            assert (await send(gw, "hi again")).text == "echo: hi again"
    finally:
        for pid in holders.read_text().split() if holders.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


async def test_pi_that_cannot_start_is_one_failure(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-pi")
    async with pi_gateway(tmp_path, pi_command=[missing], inventory_wait=0.1) as (gw, _):
        sink = await send(gw, "hello")
        assert sink.reply is not None and sink.reply.category == "generic"
        assert sink.text.startswith("The request failed: could not start pi (")


async def test_deadline_aborts_pi_so_the_next_turn_runs(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path, run_timeout=1.0) as (gw, _):
        sink = await send(gw, "[hold] too long")
        assert sink.reply is not None and sink.reply.category == "timeout"
        after = await send(gw, "next")  # pi was aborted: not "already processing"
        assert after.text == "echo: next"


PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 20
FILES = (
    Attachment("chart.png", "image/png", PNG),
    Attachment("data.zip", "application/zip", b"PK"),
)


def user_parts(model: MockModel) -> list[dict[str, Any]]:
    """The content parts of the last user message of the model's last request."""
    [*_, body] = model.requests
    user = [m for m in body["messages"] if m.get("role") == "user"][-1]
    content = user["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


async def test_images_go_to_a_vision_model_and_other_files_as_descriptors(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path, inputs=("text", "image")) as (gw, model):
        sink = await send(gw, "what is this?", files=FILES)
    assert sink.reply is not None and sink.reply.category is None
    parts = user_parts(model)
    image = next(p for p in parts if p["type"] == "image_url")
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    text = "".join(p.get("text", "") for p in parts)
    assert "what is this?" in text and "data.zip (application/zip, 2 bytes)" in text
    assert "chart.png" not in text  # the image itself went


async def test_a_model_without_vision_gets_the_descriptor_of_an_image(tmp_path: Path) -> None:
    async with pi_gateway(tmp_path) as (gw, model):
        sink = await send(gw, "", files=FILES[:1])
    assert sink.reply is not None and sink.reply.category is None
    parts = user_parts(model)
    assert [p["type"] for p in parts] == ["text"]
    assert parts[0]["text"] == (
        f"[attached file: chart.png (image/png, {len(PNG)} bytes); its contents are not included]"
    )


def said_by_user(model: MockModel) -> list[str]:
    """Every user message the model saw in its last request: the conversation so far."""
    messages = model.requests[-1]["messages"]
    return [str(m.get("content")) for m in messages if m.get("role") == "user"]


async def test_a_conversation_resumes_its_pi_session_after_a_restart(tmp_path: Path) -> None:
    durable = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with pi_gateway(tmp_path, **durable) as (gw, _):
        await send(gw, "first words")
    async with pi_gateway(tmp_path, **durable) as (gw, model):
        await send(gw, "second words")
        history = said_by_user(model)
        assert any("first words" in m for m in history), history  # the old session, resumed
        await send(gw, "/new")
        await send(gw, "third words")
        history = said_by_user(model)
        assert not any("first words" in m for m in history), history  # /new: afresh
