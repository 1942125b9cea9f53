"""A command is "unsupported" only against a command list the runtime gave: while the list is
not loaded the input goes on and the agent answers it (or says why it cannot), and a name the
list lacks makes the core ask the runtime once more before rejecting it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from contract import Command
from gateway.core import Gateway
from gateway.events import ErrorEvent, MessageDelta, MessageEnd, RuntimeEvent, SessionUpdated
from gateway.inbound import InboundMessage, Reply
from gateway.runtimes import Runtime, RuntimeSession, Turn
from gateway.runtimes.base import UpdateListener
from tests.conftest import make_settings
from tests.probe import RecordingSink


def message(text: str) -> InboundMessage:
    return InboundMessage(channel="test", conversation="c1", user="u1", text=text)


class _Agent(Runtime):
    """Sessions that list ``listed`` (None: never a list) and fail while ``refusal`` is set;
    asked again, they list ``later`` instead.
    """

    name = "agent"

    def __init__(
        self,
        listed: tuple[Command, ...] | None,
        refusal: str | None = None,
        later: tuple[Command, ...] | None = None,
    ) -> None:
        self.listed, self.refusal, self.later = listed, refusal, later
        self.seen: list[tuple[str | None, str]] = []
        self.refreshes = 0

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        if self.listed is not None:
            updates(SessionUpdated(commands=self.listed))
        return _Session(self, updates)


class _Session(RuntimeSession):
    def __init__(self, agent: _Agent, updates: UpdateListener) -> None:
        self.agent, self.updates = agent, updates

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        self.agent.seen.append((turn.command, turn.message.payload.source))
        if self.agent.refusal is not None:
            yield ErrorEvent("generic", self.agent.refusal)
            return
        yield MessageDelta(f"got {turn.message.payload.source}")
        yield MessageEnd()

    async def cancel(self) -> None:
        return None

    async def refresh_commands(self) -> None:
        self.agent.refreshes += 1
        if self.agent.later is not None:
            self.updates(SessionUpdated(commands=self.agent.later))


async def test_no_command_is_unsupported_while_the_list_is_not_loaded() -> None:
    agent = _Agent(None, refusal="the server refused the principal service:x")
    gateway = Gateway(make_settings(inventory_wait=0.05), agent)
    await gateway.start()
    try:
        sink = RecordingSink()
        failed = await gateway.handle(message("/echo hi"), sink)
        assert sink.finals == [
            Reply(
                "Slash command /echo failed: the server refused the principal service:x",
                "generic",
                slash=True,
            )
        ]
        assert failed.forwarded is not None  # the agent was asked, and said why not
        preview = await gateway.preview(message("/echo hi"))
        assert preview.reply is None and preview.forwarded is not None

        agent.refusal = None  # granted: the agent answers what it got, as typed
        works = await gateway.handle(message("/echo hi"))
        assert works.reply is not None and works.reply.text == "got /echo hi"
        assert agent.seen == [(None, "/echo hi"), (None, "/echo hi")]
    finally:
        await gateway.stop()


async def test_a_name_the_list_lacks_is_unsupported_once_asked_again() -> None:
    agent = _Agent((Command(name="go"),))
    gateway = Gateway(make_settings(), agent)
    await gateway.start()
    try:
        outcome = await gateway.handle(message("/echo hi"))
        assert outcome.reply is not None and outcome.reply.category == "unsupported"
        assert outcome.reply.text == (
            "Unsupported slash command /echo. Send /help to list available commands."
        )
        assert agent.seen == [] and agent.refreshes == 1
    finally:
        await gateway.stop()


async def test_a_command_declared_since_the_list_came_runs() -> None:
    agent = _Agent((Command(name="go"),), later=(Command(name="go"), Command(name="summarize")))
    gateway = Gateway(make_settings(), agent)
    await gateway.start()
    try:
        outcome = await gateway.handle(message("/summarize now"))
        assert outcome.reply is not None and outcome.reply.text == "got /summarize now"
        assert outcome.classification.kind == "supported"
        assert agent.seen == [("summarize", "/summarize now")]
        names = [c.name for c in await gateway.commands("test", "c1")]
        assert "summarize" in names
    finally:
        await gateway.stop()
