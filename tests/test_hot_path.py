"""The core's hot-path shortcuts (docs/architecture.md): a short input of an open
conversation is classified and built in place (``offload.at_once``, not ``contract_work``'s
coroutine); a turn the runtime answered at once, for a sink that streams nothing, is read in
place (``events.Answered``: no deadline, no coroutine of the run); the whole input then takes
no pass of the event loop. A sink's hooks are looked up once per class, and the ones its class
does not override are never called. Routing asks for no rejection text for the kinds that
run (``contract.RUNS``); the hot hooks (``accepted``, ``delta``) are guarded in place, not
through ``delivery.safely``; a journal entry is encoded by joining the C encoder's pieces. An
input that may be withdrawn before its turn costs one dict entry, no pass of the loop.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Coroutine
from typing import Any, NoReturn, get_args

import pytest

from contract import RUNS, Classification, ComposerInputMessage, Kind, SlashContract
from gateway import delivery, routing
from gateway.core import Gateway
from gateway.inbound import InboundMessage, Outcome, Reply, ReplySink
from gateway.run import Runs
from gateway.runtimes.embedded import demo_bot
from gateway.state import Entry
from tests.conftest import make_settings
from tests.probe import RecordingSink


class FinalSink(ReplySink):
    """A sink without streaming hooks (as the webhook's plain answer)."""

    def __init__(self) -> None:
        self.finals: list[Reply] = []

    async def final(self, reply: Reply) -> None:
        self.finals.append(reply)


def message(text: str) -> InboundMessage:
    return InboundMessage(channel="test", conversation="hot", user="u1", text=text)


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    gateway = Gateway(make_settings(), demo_bot())
    await gateway.start()
    await gateway.handle(message("/echo open the session"), FinalSink())
    yield gateway
    await gateway.stop()


def refused(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError("the hot path took the long way")


def at_once(handling: Coroutine[Any, Any, Outcome]) -> Outcome:
    """The outcome of ``handling`` run to its end without waiting for anything (else fail)."""
    try:
        handling.send(None)
    except StopIteration as end:
        outcome: Outcome = end.value
        return outcome
    handling.close()
    raise AssertionError("the turn waited for the event loop")


async def test_an_answer_at_hand_is_handled_without_a_pass_of_the_loop(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routing, "contract_work", refused)
    monkeypatch.setattr(Runs, "_run", refused)
    sink = FinalSink()
    outcome = at_once(gateway.handle(message("/echo hello"), sink))
    assert outcome.reply is not None and outcome.reply.text == "hello"
    assert sink.finals == [outcome.reply]


async def test_an_input_that_may_be_withdrawn_still_takes_no_pass_of_the_loop(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A message id makes it withdrawable until its turn (gateway/withdrawals.py): a dict
    # entry, and nothing to wait for.
    monkeypatch.setattr(Runs, "_run", refused)
    named = InboundMessage(
        channel="test", conversation="hot", user="u1", text="/echo hi", message_id="m1"
    )
    outcome = at_once(gateway.handle(named, FinalSink()))
    assert outcome.reply is not None and outcome.reply.text == "hi"
    assert gateway.withdraw("test", "m1", "u1") is None  # answered: nothing left behind


async def test_a_streaming_sink_gets_the_answer_at_hand_as_a_stream(gateway: Gateway) -> None:
    sink = RecordingSink()
    outcome = await gateway.handle(message("/echo hello"), sink)
    assert outcome.reply is not None and outcome.reply.text == "hello"
    assert "".join(sink.deltas) == "hello"
    assert sink.finals == [outcome.reply]


def test_a_sinks_hooks_are_the_ones_its_class_overrides_looked_up_once() -> None:
    assert delivery.hooks(FinalSink) == {"final"}
    assert delivery.hooks(FinalSink) is delivery.hooks(FinalSink)
    assert delivery.hooks(RecordingSink) == {"accepted", "delta", "event", "final"}
    assert delivery.hooks(ReplySink) == frozenset()


def test_the_kinds_that_run_are_the_ones_without_a_rejection() -> None:
    # Routing skips ``rejection`` for RUNS: were a kind in it refused, its text would be lost.
    contract = SlashContract()
    for kind in get_args(Kind):
        result = Classification(contract, "/x", kind, "x", "x")
        assert (contract.rejection(result) is None) is (kind in RUNS), kind


class BrokenHooks(RecordingSink):
    """A sink whose acknowledgement and previews fail to render."""

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        raise RuntimeError("accepted failed")

    async def delta(self, text: str) -> None:
        raise RuntimeError("delta failed")


async def test_a_sink_whose_hooks_fail_to_render_still_gets_the_final_reply(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    sink = BrokenHooks()
    with caplog.at_level(logging.ERROR, "slashgate.core"):
        outcome = await gateway.handle(message("/echo hello"), sink)
    assert outcome.reply is not None and outcome.reply.text == "hello"
    assert sink.finals == [outcome.reply]
    failed = [r.exc_info[1] for r in caplog.records if r.exc_info and r.exc_info[1]]
    assert [str(e) for e in failed] == ["accepted failed", "delta failed"]


def test_an_entry_is_encoded_as_compact_json() -> None:
    entry = Entry(id="e1", conversation="t:c", channel="t", body={"text": "héllo 😀", "n": [1]})
    entry.state, entry.reply = "answered", {"text": "ok ✓", "category": None}
    fields = {
        "id": "e1", "conversation": "t:c", "channel": "t", "body": entry.body,
        "state": "answered", "reply": entry.reply, "owner": "", "seq": 0, "command": None,
        "created": 0.0,
    }  # fmt: skip
    assert entry.encode() == json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
    assert entry.size() == len("héllo 😀") + len("ok ✓")
    assert Entry.decode(entry.encode()) == entry
