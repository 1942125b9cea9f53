"""Withdrawing an input before its turn (``GatewayAPI.withdraw``): a queued input taken back
leaves the queue at once, never reaches the runtime and gets no reply, and its journal entry
ends; one taken back on its way to the queue does not run either; a running or answered
input, or someone else's, is not withdrawn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.core import Gateway
from gateway.inbound import InboundMessage, Outcome
from gateway.state import Entry
from tests.probe import Probe, RecordingSink, until

WAIT = 5.0  # upper bound for awaiting what must happen; never a sleep


def message(text: str, user: str = "u1") -> InboundMessage:
    return InboundMessage(channel="test", conversation="c1", user=user, text=text, message_id=text)


def queued(gateway: Gateway) -> int:
    return gateway._conversations["test:c1"].queued


async def journaled(gateway: Gateway, text: str) -> Entry:
    entry = await gateway.accept("test", "c1", {"text": text}, claim=f"test:{text}")
    assert entry is not None
    return entry


async def test_a_queued_input_withdrawn_never_runs_and_is_not_replayed(
    probe_gateway: tuple[Gateway, Probe],
) -> None:
    gateway, probe = probe_gateway
    running = asyncio.create_task(gateway.handle(message("/wait")))
    await asyncio.wait_for(probe.started.wait(), WAIT)
    sinks = {text: RecordingSink() for text in ("first", "second")}
    waiting: dict[str, asyncio.Task[Outcome]] = {}
    for text, sink in sinks.items():
        entry = await journaled(gateway, text)
        waiting[text] = asyncio.create_task(gateway.handle(message(text), sink, entry))
    await until(lambda: queued(gateway) == 2)

    assert gateway.withdraw("test", "first", "u1") == "c1"
    assert queued(gateway) == 1  # it left the queue at once
    withdrawn = await asyncio.wait_for(waiting["first"], WAIT)
    assert withdrawn.reply is None and sinks["first"].finals == []
    assert [e.body for e in await gateway.store.pending()] == [{"text": "second"}]
    assert gateway.withdraw("test", "first", "u1") is None  # once

    probe.gate.set()
    answered = await asyncio.wait_for(waiting["second"], WAIT)
    assert answered.reply is not None and answered.reply.text == "got: second"
    await running
    assert probe.seen == ["/wait", "second"]
    assert await gateway.store.pending() == []  # a restart replays nothing


async def test_an_input_withdrawn_while_its_session_opens_does_not_run(
    probe_gateway: tuple[Gateway, Probe],
) -> None:
    gateway, probe = probe_gateway
    sink = RecordingSink()
    early = asyncio.create_task(gateway.handle(message("early"), sink))
    await until(lambda: gateway.withdraw("test", "early", "u1") == "c1")
    outcome = await asyncio.wait_for(early, WAIT)
    assert outcome.reply is None and sink.finals == [] and sink.accepts == []
    answered = await asyncio.wait_for(gateway.handle(message("then")), WAIT)
    assert answered.reply is not None and answered.reply.text == "got: then"
    assert probe.seen == ["then"]


async def test_an_input_withdrawn_on_its_way_to_the_queue_does_not_run(
    probe_gateway: tuple[Gateway, Probe],
) -> None:
    gateway, probe = probe_gateway
    await gateway.handle(message("open"))  # the session is open: no wait for it below
    # "/status" took its place in the conversation's line first: "after" waits behind it.
    before = await journaled(gateway, "/status")
    after = await journaled(gateway, "after")
    sink = RecordingSink()
    later = asyncio.create_task(gateway.handle(message("after"), sink, after))
    await until(lambda: gateway.withdraw("test", "after", "u1") == "c1")
    status = await asyncio.wait_for(gateway.handle(message("/status"), None, before), WAIT)
    assert status.reply is not None  # the gateway's own command: the run slot stays free
    outcome = await asyncio.wait_for(later, WAIT)
    assert outcome.reply is None and sink.finals == [] and sink.accepts == []
    # The slot it found free is free again.
    again = await asyncio.wait_for(gateway.handle(message("again")), WAIT)
    assert again.reply is not None and again.reply.text == "got: again"
    assert probe.seen == ["open", "again"]
    assert await gateway.store.pending() == []


async def test_a_running_answered_or_someone_elses_input_is_not_withdrawn(
    probe_gateway: tuple[Gateway, Probe],
) -> None:
    gateway, probe = probe_gateway
    answered = await gateway.handle(message("done"))
    assert answered.reply is not None
    assert gateway.withdraw("test", "done", "u1") is None
    running = asyncio.create_task(gateway.handle(message("/wait")))
    await asyncio.wait_for(probe.started.wait(), WAIT)
    assert gateway.withdraw("test", "/wait", "u1") is None
    waiting = asyncio.create_task(gateway.handle(message("mine")))
    await until(lambda: queued(gateway) == 1)
    assert gateway.withdraw("test", "mine", "u2") is None  # not its sender
    assert gateway.withdraw("test", "never sent", "u1") is None
    probe.gate.set()
    results: list[Any] = [await asyncio.wait_for(t, WAIT) for t in (running, waiting)]
    assert [r.reply.text for r in results] == ["started released", "got: mine"]
    assert probe.seen == ["done", "/wait", "mine"]
