"""A conversation is free once its runtime turn ends, while the reply still goes out: the next
turn runs (no "busy"), and what it shows follows that reply, never overtakes it.
"""

from __future__ import annotations

import asyncio

from gateway.core import Gateway
from gateway.inbound import InboundMessage, Outcome, Reply
from tests.probe import RecordingSink, until

WAIT = 5.0  # upper bound for awaiting what must happen; never a sleep


def message(text: str) -> InboundMessage:
    return InboundMessage(channel="test", conversation="c1", user="u1", text=text)


class SlowSink(RecordingSink):
    """A channel whose final reply takes until ``gate`` opens to go out (a platform's budget
    spent by other conversations); ``shown`` is what the chat shows, in order.
    """

    def __init__(self, shown: list[str], gate: asyncio.Event | None = None) -> None:
        super().__init__()
        self.shown = shown
        self.gate = gate
        self.sending = asyncio.Event()

    async def delta(self, text: str) -> None:
        self.shown.append(f"preview {text.strip()}")
        await super().delta(text)

    async def final(self, reply: Reply) -> None:
        self.sending.set()
        if self.gate is not None:
            await self.gate.wait()
        self.shown.append(f"final {reply.text}")
        await super().final(reply)


async def slow_first(
    gateway: Gateway, text: str
) -> tuple[list[str], asyncio.Event, asyncio.Task[Outcome]]:
    """A turn whose runtime is done and whose reply waits for the gate: what the chat shows,
    the gate, the input's task.
    """
    shown: list[str] = []
    gate = asyncio.Event()
    sink = SlowSink(shown, gate)
    first = asyncio.create_task(gateway.handle(message(text), sink))
    await asyncio.wait_for(sink.sending.wait(), WAIT)
    return shown, gate, first


async def test_the_next_command_runs_while_the_reply_still_goes_out(probe_gateway) -> None:
    gateway, probe = probe_gateway
    shown, gate, first = await slow_first(gateway, "hello")
    second_sink = SlowSink(shown)
    second = asyncio.create_task(gateway.handle(message("/wait"), second_sink))
    await asyncio.wait_for(probe.started.wait(), WAIT)  # it runs: not "busy"
    await until(lambda: len(probe.seen) == 2)
    assert shown == ["preview got: hello"], "nothing overtakes the first reply"
    assert second_sink.deltas == []

    gate.set()  # the first reply goes out; the second turn's text shows after it
    await asyncio.wait_for(first, WAIT)
    await until(lambda: second_sink.deltas == ["started "])
    probe.gate.set()
    outcome = await asyncio.wait_for(second, WAIT)
    assert outcome.reply is not None and outcome.reply.text == "started released"
    assert shown == [
        "preview got: hello",
        "final got: hello",
        "preview started",
        "preview released",
        "final started released",
    ]


async def test_a_reply_ready_before_the_previous_one_is_out_waits_for_it(probe_gateway) -> None:
    gateway, _ = probe_gateway
    shown, gate, first = await slow_first(gateway, "one")
    conv = gateway._conversations["test:c1"]
    first_delivery = conv.delivering
    second = asyncio.create_task(gateway.handle(message("two"), SlowSink(shown)))
    await until(lambda: conv.delivering is not first_delivery)  # its runtime turn is over
    assert shown == ["preview got: one"] and not conv.busy
    gate.set()
    await asyncio.wait_for(asyncio.gather(first, second), WAIT)
    # The second turn's text was ready before the first reply went: its final says it all.
    assert shown == ["preview got: one", "final got: one", "final got: two"]
    assert conv.delivering is None
