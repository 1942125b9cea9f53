"""A runtime that records every input it receives and answers each at once: the tests of the
access policy check what reached it (nothing, for a refused input).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

from contract import Command
from gateway.events import MessageDelta, MessageEnd, Mode, RuntimeEvent, SessionUpdated
from gateway.runtimes.base import Runtime, RuntimeSession, Turn, UpdateListener

COMMANDS = (
    Command(name="echo", description="Echo the text", source="runtime"),
    Command(name="skill:deploy", description="Deploy", source="runtime"),
)
MODES = (Mode("ask", "Ask"), Mode("code", "Code"))
CODE = re.compile(r"\b[A-HJ-NP-Z2-9]{8}\b")  # a pairing code: no 0, O, 1 or I


class RecordingSession(RuntimeSession):
    def __init__(self, runtime: Recording) -> None:
        self.runtime = runtime

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        self.runtime.inputs.append(turn)
        yield MessageDelta(f"ran: {turn.message.payload.source}")
        yield MessageEnd()

    async def cancel(self) -> None:
        return None

    async def set_mode(self, mode_id: str) -> None:
        self.runtime.modes_set.append(mode_id)


class Recording(Runtime):
    name = "recording"

    def __init__(
        self, commands: tuple[Command, ...] = COMMANDS, modes: tuple[Mode, ...] = MODES
    ) -> None:
        self.commands = commands
        self.modes = modes
        self.inputs: list[Turn] = []
        self.modes_set: list[str] = []

    @property
    def texts(self) -> list[str]:
        return [t.message.payload.source for t in self.inputs]

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        updates(SessionUpdated(commands=self.commands, modes=self.modes, current_mode="ask"))
        return RecordingSession(self)

    async def static_commands(self) -> tuple[Command, ...] | None:
        return self.commands


def pairing_code(text: str) -> str:
    found = CODE.findall(text.replace("*", ""))
    assert found, f"no pairing code in {text!r}"
    return str(found[0])
