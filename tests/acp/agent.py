"""A test ACP agent written with the official SDK; the tests run it as a subprocess.

What it does depends on the prompt's text, so that each test picks a behaviour:
``/web q``, ``/memory show x`` (echoes the text it got, unstripped) and ``/review x`` are
commands; ``tool`` runs a tool behind a permission request;
``hold`` streams, then waits for session/cancel; ``crash`` streams, then exits mid-turn;
``plan``, ``refuse``, ``withdraw`` (empty command list), ``noisy`` (1 MiB on stderr), ``env``,
``mode``, ``cancels`` (how many session/cancel came), ``burst`` (200 ordered chunks);
anything else is echoed with its content blocks.
With ``ACP_TEST_AUTH=1`` session/new needs ``authenticate`` first; with ``ACP_TEST_EMPTY_FIRST=1``
the list sent before the session/new reply is empty.
"""

from __future__ import annotations

import asyncio
import os
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
    update_plan,
    update_tool_call,
)
from acp.helpers import update_available_commands, update_current_mode
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AuthenticateResponse,
    AuthMethodAgent,
    AvailableCommand,
    AvailableCommandInput,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    TextContentBlock,
    UnstructuredCommandInput,
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


class TestAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.sessions = 0
        self.modes: dict[str, str] = {}
        self.cancelled: dict[str, asyncio.Event] = {}
        self.authenticated = os.environ.get("ACP_TEST_AUTH") != "1"
        self.tasks: set[asyncio.Task[None]] = set()
        self.cancels = 0

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=PromptCapabilities(image=True)
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
        self.sessions += 1
        sid = f"sess-{self.sessions}"
        self.modes[sid] = "ask"
        self.cancelled[sid] = asyncio.Event()
        # Advertised before the reply: the client must keep it until it knows the session id.
        early = [] if os.environ.get("ACP_TEST_EMPTY_FIRST") == "1" else EARLY
        await self.conn.session_update(sid, update_available_commands(early))
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
        )

    async def _late_commands(self, sid: str) -> None:
        await asyncio.sleep(0.2)  # the agent's own pace: after the session/new reply went out
        await self.conn.session_update(sid, update_available_commands(LATE))

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
        self.cancelled[sid].clear()
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
        else:
            await self.say(sid, "echo: " + " | ".join(_describe(b) for b in prompt))
        return PromptResponse(stop_reason="end_turn")

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


def _describe(block: Any) -> str:
    if isinstance(block, TextContentBlock):
        return f"text:{block.text}"
    if isinstance(block, ResourceContentBlock):
        return f"link:{block.name}:{block.uri}"
    return f"{block.type}"


if __name__ == "__main__":
    asyncio.run(run_agent(TestAgent()))
