"""The core pipeline: busy policy, queue order, deadlines, cancel, host commands, failures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from contract import Command
from gateway.conversation import Conversation
from gateway.core import Gateway
from gateway.events import (
    MessageDelta,
    MessageEnd,
    Mode,
    RuntimeEvent,
    SessionUpdated,
    UsageReported,
)
from gateway.inbound import InboundMessage, Outcome, Reply
from gateway.journal import reply_record
from gateway.runtimes import Runtime, RuntimeSession, Turn
from gateway.runtimes.base import UpdateListener
from gateway.runtimes.embedded import demo_bot
from gateway.state import Entry
from gateway.state.memory import MemoryStore
from tests.conftest import make_settings
from tests.probe import Probe, RecordingSink, until

WAIT = 5.0  # upper bound for awaiting what must happen; never a sleep


def queued(gateway: Gateway, key: str = "test:c1") -> int:
    return gateway._conversations[key].queued


def message(text: str, conversation: str = "c1", **extra: Any) -> InboundMessage:
    return InboundMessage(channel="test", conversation=conversation, user="u1", text=text, **extra)


async def start_wait(gateway: Gateway, probe: Probe) -> tuple[asyncio.Task[Outcome], RecordingSink]:
    sink = RecordingSink()
    task = asyncio.create_task(gateway.handle(message("/wait"), sink))
    await asyncio.wait_for(probe.started.wait(), WAIT)
    return task, sink


async def test_a_slash_command_while_running_gets_the_busy_text(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    running, _ = await start_wait(gateway, probe)
    sink = RecordingSink()
    outcome = await gateway.handle(message("/fail now"), sink)
    assert outcome.reply is not None
    assert outcome.reply.text == (
        "Slash command /fail could not run because the session is busy. Retry in a moment."
    )
    assert outcome.reply.category == "busy"
    assert sink.finals == [outcome.reply] and sink.accepts == []
    probe.gate.set()
    done = await asyncio.wait_for(running, WAIT)
    assert done.reply is not None and done.reply.text == "started released"
    assert probe.seen == ["/wait"], "the rejected command never reached the runtime"


async def test_plain_text_is_queued_and_runs_in_order(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    running, _ = await start_wait(gateway, probe)
    followups = [asyncio.create_task(gateway.handle(message(f"m{i}"))) for i in range(3)]
    await until(lambda: queued(gateway) == 3)
    status = await gateway.handle(message("/status"))
    assert status.reply is not None
    assert "running `/wait`" in status.reply.text and "**Queue:** 3 waiting" in status.reply.text
    probe.gate.set()
    replies = [(await asyncio.wait_for(t, WAIT)).reply for t in followups]
    assert [r.text for r in replies if r] == ["got: m0", "got: m1", "got: m2"]
    assert probe.seen == ["/wait", "m0", "m1", "m2"]
    await running


async def test_queue_is_bounded(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    gateway.settings.max_queue = 1
    running, _ = await start_wait(gateway, probe)
    first = asyncio.create_task(gateway.handle(message("queued")))
    await until(lambda: queued(gateway) == 1)
    over = await gateway.handle(message("one too many"))
    assert over.reply is not None
    assert (over.reply.text, over.reply.category) == (
        "The session is busy. Retry in a moment.",
        "busy",
    )
    probe.gate.set()
    assert (await first).reply.text == "got: queued"  # type: ignore[union-attr]
    await running


async def test_reject_policy_turns_plain_text_away(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    gateway.settings.busy_policy = "reject"
    running, _ = await start_wait(gateway, probe)
    outcome = await gateway.handle(message("hello"))
    assert outcome.reply is not None and outcome.reply.category == "busy"
    assert outcome.reply.slash is False
    probe.gate.set()
    await running


async def test_interrupt_policy_cancels_the_run_and_takes_over(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    gateway.settings.busy_policy = "interrupt"
    running, _ = await start_wait(gateway, probe)
    outcome = await asyncio.wait_for(gateway.handle(message("instead")), WAIT)
    assert outcome.reply is not None and outcome.reply.text == "got: instead"
    interrupted = await running
    assert interrupted.reply is not None
    assert interrupted.reply.stop_reason == "cancelled"
    assert interrupted.reply.text == "started \n\n_(cancelled)_"


async def test_deadline_gives_the_timeout_text_and_frees_the_session(probe_gateway: Any) -> None:
    gateway, _ = probe_gateway
    gateway.settings.run_timeout = 0.2
    sink = RecordingSink()
    outcome = await asyncio.wait_for(gateway.handle(message("/wait"), sink), WAIT)
    assert outcome.reply is not None
    assert outcome.reply.text == "Slash command /wait timed out. Retry in a moment."
    assert outcome.reply.category == "timeout"
    assert len(sink.finals) == 1
    after = await asyncio.wait_for(gateway.handle(message("next")), WAIT)
    assert after.reply is not None and after.reply.text == "got: next"


async def test_cancel_stops_the_running_turn(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    idle = await gateway.handle(message("/cancel"))
    assert idle.reply is not None and idle.reply.text == "Nothing is running."
    running, sink = await start_wait(gateway, probe)
    cancel = await asyncio.wait_for(gateway.handle(message("/cancel")), WAIT)
    assert cancel.reply is not None and cancel.reply.text == "Cancelled the running turn."
    stopped = await asyncio.wait_for(running, WAIT)
    assert stopped.reply is not None and stopped.reply.stop_reason == "cancelled"
    assert sink.finals == [stopped.reply]


@pytest.mark.parametrize(
    ("text", "reply", "category", "slash"),
    [
        ("/fail disk full", "Slash command /fail failed: disk full", "generic", True),
        (
            "/fail unknown command /fail",
            "Unsupported slash command /fail. Send /help to list available commands.",
            "unsupported",
            True,
        ),
        (
            "/fail request timed out",
            "Slash command /fail timed out. Retry in a moment.",
            "timeout",
            True,
        ),
        (
            "/crash",
            "Unsupported slash command /crash. Send /help to list available commands.",
            "unsupported",
            True,
        ),
        ("plain-fail", "The request failed: boom", "generic", False),
    ],
)
async def test_runtime_failures_map_to_catalog_categories(
    probe_gateway: Any, text: str, reply: str, category: str, slash: bool
) -> None:
    gateway, _ = probe_gateway
    sink = RecordingSink()
    outcome = await gateway.handle(message(text), sink)
    assert outcome.reply is not None
    assert (outcome.reply.text, outcome.reply.category, outcome.reply.slash) == (
        reply,
        category,
        slash,
    )
    assert sink.finals == [outcome.reply], "a failure is exactly one message"


async def test_input_for_another_bot_is_dropped_silently(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    sink = RecordingSink()
    outcome = await gateway.handle(message("/wait@other_bot", bot_username="gw_bot"), sink)
    assert outcome.reply is None and sink.finals == [] and probe.seen == []


async def test_rejected_input_never_reaches_the_runtime(probe_gateway: Any) -> None:
    gateway, probe = probe_gateway
    for text in ("/", "/nope", "/settings", "/foo!"):
        outcome = await gateway.handle(message(text))
        assert outcome.forwarded is None and outcome.reply is not None and outcome.reply.category
    assert probe.seen == []


async def test_dynamic_commands_publish_and_new_session_forgets_them() -> None:
    gateway = Gateway(make_settings(), demo_bot())
    published: list[tuple[Command, ...]] = []
    gateway.subscribe(published.append)
    await gateway.start()
    try:
        assert [c.name for c in gateway.menu() or ()][:4] == ["help", "new", "cancel", "status"]
        await gateway.handle(message("/remember greet Hello there"))
        # One conversation's commands are its own: never in everybody's menu.
        assert all(c.name != "greet" for menu in published for c in menu)
        assert "greet" in [c.name for c in await gateway.commands("test", "c1")]
        greet = await gateway.handle(message("/greet"))
        assert greet.reply is not None and greet.reply.text == "Hello there"
        other = await gateway.handle(message("/greet", conversation="c2"))
        assert other.reply is not None and other.reply.category == "unsupported"
        new = await gateway.handle(message("/new"))
        assert new.reply is not None and new.reply.text == "Started a new session."
        gone = await gateway.handle(message("/greet"))
        assert gone.reply is not None and gone.reply.category == "unsupported"
        help_text = (await gateway.handle(message("/help"))).reply
        assert (
            help_text is not None
            and "- `/echo <text>` — Reply with exactly the given text" in help_text.text
        )
    finally:
        await gateway.stop()


class _BrokenSession(RuntimeSession):
    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        raise ConnectionResetError("agent pipe closed")
        yield  # pragma: no cover - makes this an async generator

    async def cancel(self) -> None:
        return None


class _BrokenRuntime(Runtime):
    name = "broken"

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        updates(SessionUpdated(commands=(Command(name="go"),)))
        return _BrokenSession()


async def test_a_runtime_exception_is_one_generic_failure_not_a_crash() -> None:
    gateway = Gateway(make_settings(), _BrokenRuntime())
    await gateway.start()
    sink = RecordingSink()
    outcome = await gateway.handle(message("/go"), sink)
    assert outcome.reply is not None
    assert outcome.reply.text == "Slash command /go failed: agent pipe closed"
    assert sink.finals == [outcome.reply]
    plain = await gateway.handle(message("hi"))
    assert plain.reply is not None and plain.reply.text == "The request failed: agent pipe closed"
    await gateway.stop()


class _Flaky(Runtime):
    """Opens fail ``failures`` times; sessions report modes, ignore cancel if asked to."""

    name = "flaky"

    def __init__(self, failures: int = 0, deaf: bool = False) -> None:
        self.failures = failures
        self.deaf = deaf
        self.gate = asyncio.Event()
        self.opened: list[str] = []
        self.closed: list[str] = []
        self.slow_open: dict[str, asyncio.Event] = {}

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        if self.failures:
            self.failures -= 1
            raise ConnectionError("agent not reachable")
        if key in self.slow_open:
            await self.slow_open[key].wait()
        self.opened.append(key)
        updates(SessionUpdated(commands=(Command(name="go"),)))
        return _FlakySession(self, key, updates)


class _FlakySession(RuntimeSession):
    def __init__(self, runtime: _Flaky, key: str, updates: UpdateListener) -> None:
        self.runtime, self.key, self.updates = runtime, key, updates
        self.cancelled = asyncio.Event()

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        self.updates(SessionUpdated(modes=(Mode("ask", "Ask"), Mode("code", "Code"))))
        yield MessageDelta("working ")
        if turn.command == "go":
            await self.runtime.gate.wait()
        yield MessageEnd()

    async def cancel(self) -> None:
        if not self.runtime.deaf:
            self.runtime.gate.set()

    async def set_mode(self, mode_id: str) -> None:
        raise PermissionError(f"mode {mode_id} is locked")

    async def close(self) -> None:
        self.runtime.closed.append(self.key)


async def test_a_runtime_that_cannot_open_gives_one_reply_and_recovers() -> None:
    gateway = Gateway(make_settings(), _Flaky(failures=2))
    await gateway.start()
    # A gateway command does not wait for the session's open; the next input does.
    helped = await gateway.handle(message("/help"))
    assert helped.reply is not None and helped.reply.text.startswith("**Gateway commands**")
    sink = RecordingSink()
    outcome = await gateway.handle(message("/go now"), sink)
    assert sink.finals == [outcome.reply]
    assert outcome.reply is not None
    assert outcome.reply.text == "Slash command /go failed: agent not reachable"
    plain = await gateway.handle(message("hello"))
    assert plain.reply is not None and plain.reply.text == "The request failed: agent not reachable"
    works = await gateway.handle(message("hello"))
    assert works.reply is not None and works.reply.text == "working "
    await gateway.stop()


async def test_modes_reported_later_enable_mode_and_its_failure_is_one_reply() -> None:
    runtime = _Flaky()
    runtime.gate.set()
    gateway = Gateway(make_settings(), runtime)
    await gateway.start()
    before = await gateway.handle(message("/mode"))
    assert before.reply is not None and before.reply.category == "unsupported"
    await gateway.handle(message("hi"))  # the turn reports modes
    listed = await gateway.handle(message("/mode"))
    assert listed.reply is not None and "Available: `ask`, `code`" in listed.reply.text
    sink = RecordingSink()
    failed = await gateway.handle(message("/mode code"), sink)
    assert failed.reply is not None and sink.finals == [failed.reply]
    assert failed.reply.text == "Slash command /mode failed: mode code is locked"
    await gateway.stop()


async def test_a_runtime_that_ignores_cancel_is_stopped_after_the_grace() -> None:
    gateway = Gateway(make_settings(cancel_grace=0.2), _Flaky(deaf=True))
    await gateway.start()
    sink = RecordingSink()
    running = asyncio.create_task(gateway.handle(message("/go"), sink))
    await asyncio.wait_for(sink.first_delta.wait(), WAIT)
    cancel = await asyncio.wait_for(gateway.handle(message("/cancel")), WAIT)
    assert cancel.reply is not None and cancel.reply.text == "Cancelled the running turn."
    stopped = await asyncio.wait_for(running, WAIT)
    assert stopped.reply is not None and stopped.reply.stop_reason == "cancelled"
    assert sink.finals == [stopped.reply]
    await gateway.stop()


async def test_a_conversation_is_not_evicted_while_its_session_opens() -> None:
    runtime = _Flaky()
    runtime.gate.set()
    runtime.slow_open["test:a"] = asyncio.Event()
    gateway = Gateway(make_settings(max_sessions=1), runtime)
    await gateway.start()
    first = asyncio.create_task(gateway.handle(message("hi", conversation="a")))
    await until(lambda: "test:a" in gateway._conversations)
    other = await gateway.handle(message("hi", conversation="b"))
    assert other.reply is not None and other.reply.text == "working "
    runtime.slow_open["test:a"].set()
    done = await asyncio.wait_for(first, WAIT)
    assert done.reply is not None and done.reply.text == "working "
    await gateway.handle(message("hi", conversation="c"))
    await gateway.stop()
    assert sorted(runtime.opened) == sorted(runtime.closed), "no session is left open"


async def test_new_goes_before_queued_follow_ups_which_run_in_the_new_session(
    probe_gateway: Any,
) -> None:
    gateway, probe = probe_gateway
    running, _ = await start_wait(gateway, probe)
    follow = asyncio.create_task(gateway.handle(message("after")))
    await until(lambda: queued(gateway) == 1)
    new = await asyncio.wait_for(gateway.handle(message("/new")), WAIT)
    assert new.reply is not None
    assert new.reply.text == "Started a new session. The running turn was cancelled."
    assert (await running).reply.stop_reason == "cancelled"  # type: ignore[union-attr]
    later = await asyncio.wait_for(follow, WAIT)
    assert later.reply is not None
    assert (later.reply.text, later.reply.stop_reason) == ("got: after", "end_turn")


async def test_shutdown_cancels_running_turns_with_their_reply_and_refuses_new_input(
    probe_gateway: Any,
) -> None:
    gateway, probe = probe_gateway
    running, sink = await start_wait(gateway, probe)
    await asyncio.wait_for(gateway.stop_runs(), WAIT)
    assert sink.finals and sink.finals[0].stop_reason == "cancelled"
    refused = await gateway.handle(message("hello"))
    assert refused.reply is not None
    assert refused.reply.text == "The request failed: the gateway is shutting down"
    await running


async def test_a_cancelled_waiter_stays_cancelled_when_the_slot_is_released() -> None:
    conv = Conversation("k", _Flaky(), lambda key, commands: None)
    assert conv.try_acquire()
    waiter = asyncio.create_task(conv.acquire())
    await until(lambda: conv.queued == 1)
    waiter.cancel()
    conv.release()  # drops the cancelled waiter and frees the slot
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert not conv.busy


class _SlowToForget(MemoryStore):
    """A store whose "delivered" write of the first entry waits until the test lets it
    through (a slow fsync).
    """

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.first: str | None = None

    async def append(
        self, entry: Entry, claim: str | None, ttl: float, value: Any = 1
    ) -> Entry | None:
        self.first = self.first or entry.id
        return await super().append(entry, claim, ttl, value)

    async def finish(self, entry: Entry) -> None:
        if entry.id == self.first:
            await self.gate.wait()
        await super().finish(entry)


async def test_a_command_sent_as_the_reply_lands_is_not_busy_while_the_journal_writes() -> None:
    store = _SlowToForget()
    gateway = Gateway(make_settings(), demo_bot(), store)
    await gateway.start()
    try:
        first_entry = await gateway.accept("test", "c1", {"text": "/echo one"})
        first_sink = RecordingSink()
        first = asyncio.create_task(gateway.handle(message("/echo one"), first_sink, first_entry))
        await until(lambda: bool(first_sink.finals))  # the user has the reply
        assert not first.done(), "the delivered write is still under way"
        second_entry = await gateway.accept("test", "c1", {"text": "/echo two"})
        second = await gateway.handle(message("/echo two"), RecordingSink(), second_entry)
        assert second.reply is not None and second.reply.text == "two"
        store.gate.set()
        await asyncio.wait_for(first, WAIT)
        assert await store.pending() == [], "both inputs were marked delivered"
    finally:
        store.gate.set()
        await gateway.stop()


async def test_a_reply_made_before_a_restart_is_delivered_with_its_usage() -> None:
    """An entry journaled as answered (its reply made, not yet sent) is delivered on start,
    the turn's usage included, as it would have been.
    """
    store = MemoryStore()
    usage = UsageReported(input_tokens=3, output_tokens=4)
    record = reply_record(Reply("done", usage=usage))
    entry = Entry("e1", "test:c1", "test", {}, "answered", record, created=1.0)
    assert await store.append(entry, None, 60.0) is not None
    gateway = Gateway(make_settings(), demo_bot(), store)
    await gateway.start()
    sink = RecordingSink()

    async def recovered(entry: Entry) -> tuple[InboundMessage, RecordingSink]:
        return message("hello"), sink

    gateway.recoverable("test", recovered)
    await gateway.recover()
    await until(lambda: bool(sink.finals))
    assert sink.finals == [Reply("done", usage=usage)]
    await gateway.stop()
