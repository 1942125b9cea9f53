"""The one owner of an input's life (gateway/answering.py): whatever fails on the way, its
user hears once; the journal keeps an input until its user was told; the conversation's line
goes on after it.
"""

from __future__ import annotations

import asyncio

from gateway.attachments import AttachmentError
from gateway.core import Gateway
from gateway.inbound import InboundMessage
from tests.probe import RecordingSink

WAIT = 5.0  # upper bound for awaiting what must happen; never a sleep


def message(text: str) -> InboundMessage:
    return InboundMessage(channel="test", conversation="c1", user="u1", text=text)


async def unreadable() -> InboundMessage:
    raise AttachmentError("photo.png is over the limit")


async def test_a_message_whose_files_fail_is_answered_once_and_the_next_runs(
    probe_gateway,
) -> None:
    gateway, probe = probe_gateway
    first = await gateway.accept("test", "c1", {"n": 1})
    second = await gateway.accept("test", "c1", {"n": 2})
    assert first is not None and second is not None
    sink = RecordingSink()
    outcome = await gateway.handle(unreadable(), sink, first)
    assert [r.category for r in sink.finals] == ["invalid"]
    assert outcome.reply is not None and "photo.png is over the limit" in outcome.reply.text
    later = await asyncio.wait_for(gateway.handle(message("two"), RecordingSink(), second), WAIT)
    assert later.reply is not None and later.reply.text == "got: two"
    assert probe.seen == ["two"]
    assert await gateway.journal.orphans(starting=True) == []  # both answered: nothing left


async def test_a_failure_in_the_pipeline_is_answered_once(
    probe_gateway: tuple[Gateway, object],
) -> None:
    gateway, _ = probe_gateway
    entry = await gateway.accept("test", "c1", {"n": 1})
    assert entry is not None
    sink = RecordingSink()
    sink.accepted = None  # type: ignore[assignment,method-assign]  # a bug: calling it fails
    outcome = await gateway.handle(message("hello"), sink, entry)
    assert [r.category for r in sink.finals] == ["generic"]
    assert outcome.reply is not None and outcome.reply.category == "generic"
    assert await gateway.journal.orphans(starting=True) == []
