"""A template for your own agent process, spoken to over the Agent Client Protocol (stdio).

slashgate starts it once (``runtime = "acp"``, ``acp_command = ["python", "acp_agent.py"]``)
and opens one ACP session per conversation. The agent advertises its slash commands per
session (they become every channel's menu), streams its answer as message chunks, and stops
when the gateway sends ``session/cancel`` (the user's ``/cancel``, a timeout, ``/new``).

Written with the official SDK (``pip install agent-client-protocol``). Replace ``answer``
with your model or tool calls. See docs/extending.md.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text
from acp.helpers import update_available_commands
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    TextContentBlock,
    UnstructuredCommandInput,
)

COMMANDS = [
    AvailableCommand(
        name="count",
        description="Count up to a number, one line at a time",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint="number")),
    ),
]


class Agent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.ids = itertools.count(1)
        self.running: dict[str, asyncio.Task[None]] = {}  # session id -> the turn in flight

    def on_connect(self, conn: Any) -> None:
        self.conn = conn  # the gateway's side: session updates go through it

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_info=Implementation(name="example-agent", version="0.1"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"session-{next(self.ids)}"
        await self.conn.session_update(session_id, update_available_commands(COMMANDS))
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = "".join(b.text for b in prompt if isinstance(b, TextContentBlock))
        turn = self.running[session_id] = asyncio.ensure_future(self.answer(session_id, text))
        try:
            await asyncio.wait({turn})
        finally:
            del self.running[session_id]
        if turn.cancelled():
            return PromptResponse(stop_reason="cancelled")
        turn.result()  # an exception in answer() is the turn's error, which the user sees
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        turn = self.running.get(session_id)
        if turn is not None:
            turn.cancel()

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id, update_agent_message_text(text))

    async def answer(self, session_id: str, text: str) -> None:
        """The turn: slash commands arrive as their text (``/count 3``), plain text as is."""
        if text.startswith("/count"):
            arg = text.removeprefix("/count").strip()
            if not arg.isdigit():
                await self.say(session_id, "usage: /count <number>")
                return
            for n in range(1, int(arg) + 1):
                await self.say(session_id, f"{n}\n")
                await asyncio.sleep(0.5)  # stands for real work; /cancel interrupts it
            return
        await self.say(session_id, f"You said: {text}")


if __name__ == "__main__":
    asyncio.run(run_agent(Agent()))
