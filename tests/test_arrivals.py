"""Arrival order in one conversation: an input journaled first runs first, whatever each
input awaits on its way; one that leaves (answered, refused, not for the bot) lets the
others go on; the lines are dropped once every input has settled.
"""

from __future__ import annotations

import asyncio

from gateway.arrivals import Arrivals
from gateway.inbound import InboundMessage
from tests.probe import RecordingSink, until

WAIT = 5.0  # upper bound for awaiting what must happen; never a sleep


def message(text: str, conversation: str = "c1") -> InboundMessage:
    return InboundMessage(channel="test", conversation=conversation, user="u1", text=text)


async def test_an_input_accepted_first_runs_first_though_handled_later(probe_gateway) -> None:
    gateway, probe = probe_gateway
    first = await gateway.accept("test", "c1", {"n": 1})
    second = await gateway.accept("test", "c1", {"n": 2})
    assert first is not None and second is not None
    later = asyncio.create_task(gateway.handle(message("two"), RecordingSink(), second))
    # It waits in line for the first, which arrived before it.
    await until(lambda: second.place is not None and second.place.waiter is not None)
    assert probe.seen == [] and not later.done()
    await gateway.handle(message("one"), RecordingSink(), first)
    outcome = await asyncio.wait_for(later, WAIT)
    assert probe.seen == ["one", "two"]
    assert outcome.reply is not None and outcome.reply.text == "got: two"


async def test_an_input_let_go_unhandled_lets_the_next_run(probe_gateway) -> None:
    gateway, _probe = probe_gateway
    dropped = await gateway.accept("test", "c1", {"n": 1})  # say, not for the bot after all
    kept = await gateway.accept("test", "c1", {"n": 2})
    assert dropped is not None and kept is not None
    later = asyncio.create_task(gateway.handle(message("two"), RecordingSink(), kept))
    await gateway.done(dropped)
    outcome = await asyncio.wait_for(later, WAIT)
    assert outcome.reply is not None and outcome.reply.text == "got: two"


async def test_other_conversations_never_wait(probe_gateway) -> None:
    gateway, _probe = probe_gateway
    held = await gateway.accept("test", "c1", {"n": 1})
    assert held is not None
    outcome = await asyncio.wait_for(gateway.handle(message("elsewhere", "c2")), WAIT)
    assert outcome.reply is not None and outcome.reply.text == "got: elsewhere"
    await gateway.done(held)


async def test_lines_are_dropped_once_their_inputs_settled_in_any_order() -> None:
    arrivals = Arrivals()
    one, two, three = (arrivals.arrive("c1") for _ in range(3))
    waiting = asyncio.create_task(arrivals.turn(three))
    await until(lambda: three.waiter is not None)
    arrivals.settle(two)  # out of order: it leaves the line after the first
    assert three.waiter is not None and not three.waiter.done()
    arrivals.settle(one)
    await asyncio.wait_for(waiting, WAIT)
    arrivals.settle(three)
    arrivals.settle(three)  # again: nothing
    assert len(arrivals) == 0
