"""A test ACP agent written with the official SDK; the tests run it as a subprocess.

What it does depends on the prompt's text, so that each test picks a behaviour:
``/web q``, ``/memory show x`` (echoes the text it got, unstripped) and ``/review x`` are
commands; ``tool`` runs a tool behind a permission request;
``hold`` streams, then waits for session/cancel; ``crash`` streams, then exits mid-turn;
``plan``, ``refuse``, ``withdraw`` (empty command list), ``noisy`` (1 MiB on stderr), ``env``,
``mode``, ``cancels`` (how many session/cancel came), ``burst`` (200 ordered chunks);
``work`` thinks, plans, runs a tool and reports usage as a working agent does;
anything else is echoed with its content blocks.
With ``ACP_TEST_AUTH=1`` session/new needs ``authenticate`` first; with ``ACP_TEST_EMPTY_FIRST=1``
the list sent before the session/new reply is empty. ``ACP_TEST_PROMPT_CAPS`` lists the
promptCapabilities it advertises (``image,audio,embeddedContext``; default ``image``, empty:
none); with ``ACP_TEST_RECORD=<file>`` every prompt's content blocks are appended to that file
(one JSON list per line, as they came over the wire).

Misbehaviours, for the isolation tests (each says on stderr when it happens):
``ACP_TEST_STUCK_NEW=N`` never answers the N-th session/new (``all``: any, as pi-acp 0.0.34);
``ACP_TEST_STUBBORN=1`` starts a ``sleep`` child and ignores SIGTERM; ``ACP_TEST_REEXEC=1`` runs
the agent in a copy of itself that it starts and waits for (as Gemini CLI relaunches itself).
The prompt ``pids`` answers ``pids=<pid> <parent pid> <child pid or 0>``.
With ``ACP_TEST_CLASH=1`` the agent also
has ``help`` and ``status`` (as Gemini and fast-agent do) and ``tool <tool-name>``; with
``ACP_TEST_SESSIONS=<file>`` it offers ``session/load`` for the sessions it listed there (the
prompt ``whoami`` answers ``session=<id>``); with
``ACP_TEST_EMPTY_AFTER_CANCEL=N`` the first N prompts after a cancelled one end at once without
a word (with 1, as claude-agent-acp does). Sessions report a model (``config_options``, category
model).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import secrets
import signal
import subprocess
import sys
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    plan_entry,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.helpers import update_available_commands, update_current_mode
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    AuthenticateResponse,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandInput,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    UnstructuredCommandInput,
    Usage,
    UsageUpdate,
)

EARLY = [
    AvailableCommand(
        name="web",
        description="Search the web",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="query")),
    ),
    AvailableCommand(name="memory show", description="Show memory"),
]
LATE = [*EARLY, AvailableCommand(name="review", description="Review a change")]
CLASH = [
    AvailableCommand(name="help", description="The agent's help"),
    AvailableCommand(name="status", description="The agent's status"),
    AvailableCommand(
        name="tool",
        description="Describe a tool",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="<tool-name>")),
    ),
]


def commands(listed: list[AvailableCommand]) -> list[AvailableCommand]:
    return [*listed, *CLASH] if listed and os.environ.get("ACP_TEST_CLASH") == "1" else listed


class TestAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions = 0
        self.modes: dict[str, str] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.empty_left: dict[str, int] = {}  # prompts still to answer empty after a cancel
        self.authenticated = os.environ.get("ACP_TEST_AUTH") != "1"
        self.tasks: set[asyncio.Task[None]] = set()
        self.cancels = 0
        self.stuck_new = os.environ.get("ACP_TEST_STUCK_NEW", "")
        self.new_calls = 0
        self.child: subprocess.Popen[bytes] | None = None
        if os.environ.get("ACP_TEST_STUBBORN") == "1":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            self.child = subprocess.Popen(["sleep", "1000"])
        tell(f"pids {os.getpid()} {os.getppid()} {self.child.pid if self.child else 0}")

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=_prompt_capabilities(),
                load_session=SESSIONS is not None,
            ),
            auth_methods=[AuthMethodAgent(id="test-token", name="Test token")],
            agent_info=Implementation(name="test-agent", version="1.0"),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        if method_id != "test-token":
            raise RequestError.invalid_params({"details": f"unknown method {method_id}"})
        self.authenticated = True
        return AuthenticateResponse()

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        if not self.authenticated:
            raise RequestError.auth_required()
        self.new_calls += 1
        if self.stuck_new in (str(self.new_calls), "all"):
            tell(f"session/new {self.new_calls}: never answering")
            await asyncio.Event().wait()
        self.sessions += 1
        sid = f"sess-{self.sessions}"
        if SESSIONS is not None:  # sessions outlive this process: ids that never repeat
            sid = f"sess-{secrets.token_hex(4)}"
            _keep_session(sid)
        self.modes[sid] = "ask"
        self.cancelled[sid] = asyncio.Event()
        # Advertised before the reply: the client must keep it until it knows the session id.
        early = [] if os.environ.get("ACP_TEST_EMPTY_FIRST") == "1" else EARLY
        await self.conn.session_update(sid, update_available_commands(commands(early)))
        task = asyncio.ensure_future(self._late_commands(sid))
        self.tasks.add(task)
        return NewSessionResponse(
            session_id=sid,
            modes=SessionModeState(
                current_mode_id="ask",
                available_modes=[
                    SessionMode(id="ask", name="Ask"),
                    SessionMode(id="code", name="Code"),
                ],
            ),
            config_options=[
                SessionConfigOptionSelect(
                    id="model",
                    name="Model",
                    category="model",
                    type="select",
                    current_value="test-model-large",
                    options=[
                        SessionConfigSelectOption(value="test-model-large", name="Large"),
                        SessionConfigSelectOption(value="test-model-small", name="Small"),
                    ],
                )
            ],
        )

    async def load_session(self, cwd: str, session_id: str, **kwargs: Any) -> LoadSessionResponse:
        if session_id not in _kept_sessions():
            raise RequestError.invalid_params({"details": f"unknown session {session_id}"})
        tell(f"session/load {session_id}")
        self.modes[session_id] = "ask"
        self.cancelled[session_id] = asyncio.Event()
        await self.conn.session_update(session_id, update_available_commands(commands(EARLY)))
        return LoadSessionResponse()

    async def _late_commands(self, sid: str) -> None:
        await asyncio.sleep(0.2)  # the agent's own pace: after the session/new reply went out
        await self.conn.session_update(sid, update_available_commands(commands(LATE)))

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        self.modes[session_id] = mode_id
        await self.conn.session_update(session_id, update_current_mode(mode_id))
        return SetSessionModeResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancels += 1
        self.cancelled[session_id].set()

    async def say(self, sid: str, *parts: str) -> None:
        for part in parts:
            await self.conn.session_update(sid, update_agent_message_text(part))

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        sid = session_id
        if self.cancelled[sid].is_set():
            self.empty_left[sid] = int(os.environ.get("ACP_TEST_EMPTY_AFTER_CANCEL", "0"))
        self.cancelled[sid].clear()
        _record(prompt)
        if self.empty_left.get(sid, 0) > 0:
            self.empty_left[sid] -= 1
            return PromptResponse(stop_reason="end_turn")
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        word = text.strip()
        if text.startswith("/web "):
            query = text[len("/web ") :]
            await self.say(sid, "results ", "for ", query)
        elif text.startswith("/memory show"):
            await self.say(sid, f"memory: {text!r}")  # exactly what came, spaces and all
        elif text.startswith("/review"):
            await self.say(sid, f"reviewing{text[len('/review') :]}")
        elif word == "tool":
            return await self.tool(sid)
        elif word == "whoami":
            await self.say(sid, f"session={sid}")
        elif word == "work":
            return await self.work(sid)
        elif text.startswith(("/help", "/status", "/tool")):
            await self.say(sid, f"agent's own {text}")
        elif word == "hold":
            await self.say(sid, "working")
            await self.cancelled[sid].wait()
            return PromptResponse(stop_reason="cancelled")
        elif word == "crash":
            await self.say(sid, "about to crash")
            os._exit(3)
        elif word == "plan":
            await self.conn.session_update(
                sid, update_plan([plan_entry("read", status="completed"), plan_entry("write")])
            )
            await self.say(sid, "planned")
        elif word == "refuse":
            return PromptResponse(stop_reason="refusal")
        elif word == "withdraw":
            await self.conn.session_update(sid, update_available_commands([]))
            await self.say(sid, "withdrawn")
        elif word == "noisy":
            sys.stderr.write("x" * 1023 + "\n" * 1 + ("y" * 1023 + "\n") * 1023)
            sys.stderr.flush()
            await self.say(sid, "quiet now")
        elif word == "env":
            await self.say(sid, f"secret={os.environ.get('ACP_TEST_SECRET')}")
        elif word == "cancels":
            await self.say(sid, f"cancels={self.cancels}")
        elif word == "mode":
            await self.say(sid, f"mode={self.modes[sid]}")
        elif word == "burst":
            await self.say(sid, *(f"{i} " for i in range(200)))
        elif word == "pids":
            child = self.child.pid if self.child else 0
            await self.say(sid, f"pids={os.getpid()} {os.getppid()} {child}")
        else:
            await self.say(sid, "echo: " + " | ".join(_describe(b) for b in prompt))
        return PromptResponse(stop_reason="end_turn")

    async def work(self, sid: str) -> PromptResponse:
        update = self.conn.session_update
        await update(sid, update_agent_thought_text("The user wants "))
        await update(sid, update_agent_thought_text("the tests run."))
        await update(sid, update_plan([plan_entry("Read the code"), plan_entry("Run the tests")]))
        await update(sid, start_tool_call("t1", "Read app.py", kind="read", status="in_progress"))
        await update(
            sid,
            update_tool_call("t1", status="completed", content=[tool_content(text_block("42"))]),
        )
        await update(
            sid,
            update_plan(
                [
                    plan_entry("Read the code", status="completed"),
                    plan_entry("Run the tests", status="in_progress"),
                ]
            ),
        )
        await update(sid, start_tool_call("t2", "Run pytest", kind="execute", status="pending"))
        await update(sid, update_tool_call("t2", status="failed"))
        await update(sid, UsageUpdate(session_update="usage_update", used=1200, size=200000))
        await self.say(sid, "worked")
        return PromptResponse(
            stop_reason="end_turn",
            usage=Usage(input_tokens=1000, output_tokens=234, total_tokens=1234),
        )

    async def tool(self, sid: str) -> PromptResponse:
        await self.conn.session_update(
            sid, start_tool_call("call-1", "Delete build/", kind="delete", status="pending")
        )
        response = await self.conn.request_permission(
            session_id=sid,
            tool_call=update_tool_call("call-1", title="Delete build/"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome) and outcome.option_id == "allow":
            await self.conn.session_update(sid, update_tool_call("call-1", status="in_progress"))
            await self.conn.session_update(
                sid,
                update_tool_call(
                    "call-1",
                    status="completed",
                    content=[tool_content(text_block("deleted 3 files"))],
                ),
            )
            await self.say(sid, "tool ran")
            return PromptResponse(stop_reason="end_turn")
        await self.conn.session_update(sid, update_tool_call("call-1", status="failed"))
        if not isinstance(outcome, AllowedOutcome):
            return PromptResponse(stop_reason="cancelled")
        await self.say(sid, "tool refused")
        return PromptResponse(stop_reason="end_turn")


# With ACP_TEST_SESSIONS=<file> the agent offers session/load for the sessions listed there.
SESSIONS = os.environ.get("ACP_TEST_SESSIONS")


def _keep_session(sid: str) -> None:
    assert SESSIONS is not None
    with open(SESSIONS, "a") as kept:
        kept.write(sid + "\n")


def _kept_sessions() -> list[str]:
    if SESSIONS is None or not os.path.exists(SESSIONS):
        return []
    with open(SESSIONS) as kept:
        return kept.read().split()


def _prompt_capabilities() -> PromptCapabilities:
    names = os.environ.get("ACP_TEST_PROMPT_CAPS", "image").split(",")
    return PromptCapabilities(
        image="image" in names, audio="audio" in names, embedded_context="embeddedContext" in names
    )


def _record(prompt: list[Any]) -> None:
    path = os.environ.get("ACP_TEST_RECORD")
    if path:
        blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in prompt]
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(blocks) + "\n")


def _describe(block: Any) -> str:
    if isinstance(block, TextContentBlock):
        return f"text:{block.text}"
    if isinstance(block, ResourceContentBlock):
        return f"link:{block.name}:{block.uri}"
    if isinstance(block, ImageContentBlock | AudioContentBlock):
        return f"{block.type}:{block.mime_type}:{len(base64.b64decode(block.data))} bytes"
    if isinstance(block, EmbeddedResourceContentBlock):
        return f"resource:{block.resource.uri}:{block.resource.mime_type}"
    return f"{block.type}"


def tell(line: str) -> None:
    """A line on stderr, which the gateway logs (at debug level): how a test sees a step."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def relaunch() -> int:
    """The agent runs in a child with the same stdio; this process only waits for it."""
    env = {k: v for k, v in os.environ.items() if k != "ACP_TEST_REEXEC"}
    return subprocess.call([sys.executable, *sys.argv], env=env)


if __name__ == "__main__":
    if os.environ.get("ACP_TEST_REEXEC") == "1":
        sys.exit(relaunch())
    asyncio.run(run_agent(TestAgent()))
