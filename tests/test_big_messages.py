"""Big messages are checked, answered and written off the event loop (issue 10): the
handler, the user and the client get what the small path gives them."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from channels.webhook import answer
from contract import ComposerInputMessage, ComposerInputPayload, TextNode
from gateway import jsonslices, offload
from gateway.composer import payload_json
from gateway.events import ErrorEvent, MessageDelta, MessageEnd, RuntimeEvent
from gateway.runtimes import Turn
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext, InboxWake
from gateway.runtimes.embedded import runtime as embedded
from gateway.state import Entry
from tests.conftest import ServerFactory

# A pasted report: references (thousands of nodes), an emoji (escaped in the JSON).
LINE = 'see @file:src/a.py again 😀 and @branch:main, @symbol:Gateway "quoted" \\ /x\n'
TEXT = "/echo " + LINE * (offload.THRESHOLD // len(LINE) + 1)


async def _post(
    url: str, text: str, headers: dict[str, str] | None = None
) -> tuple[bytes, str, str | None]:
    body = {"conversation": "big", "user": "u1", "text": text}
    async with aiohttp.ClientSession() as client:
        async with client.post(f"{url}/v1/messages", json=body, headers=headers) as response:
            assert response.status == 200
            raw = await response.read()
            return raw, response.headers["Content-Type"], response.headers.get("Content-Length")


def _on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offload, "THRESHOLD", 10 * len(TEXT))  # everything on the loop


async def test_a_big_answer_has_the_bytes_of_the_small_path(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with gateway_server() as server:
        big = await _post(server.url, TEXT)
        _on_the_loop(monkeypatch)
        small = await _post(server.url, TEXT)
    assert big == small
    raw, content_type, length = big
    assert content_type == "application/json; charset=utf-8"
    assert length == str(len(raw))
    answer_ = json.loads(raw)
    assert answer_["reply"]["text"] == TEXT.removeprefix("/echo ").strip()
    assert len(answer_["forwarded"]["payload"]["nodes"]) > 3 * jsonslices.SLICE
    assert raw == json.dumps(answer_).encode()


async def test_big_events_have_the_bytes_of_the_small_path(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    sse = {"Accept": "text/event-stream"}
    async with gateway_server() as server:
        big = await _post(server.url, TEXT, sse)
        _on_the_loop(monkeypatch)
        small = await _post(server.url, TEXT, sse)
    assert big == small
    frames = big[0].decode().split("\n\n")
    assert [frame.split("\n")[0] for frame in frames] == [
        "event: accepted", "event: delta", "event: reply", "",
    ]  # fmt: skip
    reply = json.loads(frames[2].removeprefix("event: reply\ndata: "))
    assert reply["reply"]["text"] == TEXT.removeprefix("/echo ").strip()
    assert frames[2] == "event: reply\ndata: " + json.dumps(reply, ensure_ascii=False)


async def test_a_big_answer_is_replayed_by_its_key_with_the_same_bytes(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Stored and replayed off the loop or on it, in any mix: the bytes of the first answer."""
    async with gateway_server(store="sqlite", state_path=tmp_path / "state.sqlite3") as server:
        big = await _post(server.url, TEXT, {"Idempotency-Key": "big"})
        with monkeypatch.context() as patch:
            _on_the_loop(patch)
            stored_big_replayed_small = await _post(server.url, TEXT, {"Idempotency-Key": "big"})
            small = await _post(server.url, TEXT, {"Idempotency-Key": "small"})
        stored_small_replayed_big = await _post(server.url, TEXT, {"Idempotency-Key": "small"})
        replayed_big = await _post(server.url, TEXT, {"Idempotency-Key": "big"})
    assert big == small == stored_big_replayed_small == stored_small_replayed_big == replayed_big
    assert json.loads(big[0])["reply"]["text"] == TEXT.removeprefix("/echo ").strip()


def _body(items: int) -> dict[str, Any]:
    nodes = [{"kind": "text", "start": i, "end": i + 1, "raw": 'é\n"😀'} for i in range(items)]
    return {
        "conversation": "c",
        "classification": {"kind": "supported", "command": "echo", "args": ""},
        "forwarded": {"type": "composer_input", "payload": {"source": "😀", "nodes": nodes}},
        "reply": {"text": "x", "category": None, "usage": {}, "nested": [[], {}, [1.5, True]]},
    }


@pytest.mark.parametrize(
    "items", [0, 1, jsonslices.SLICE, jsonslices.SLICE + 1, 3 * jsonslices.SLICE + 7]
)
def test_the_sliced_encoding_is_json_dumps(items: int) -> None:
    body = _body(items)
    assert answer.sliced_json(body) == json.dumps(body).encode()
    assert (
        jsonslices.dump_bytes(body, ensure_ascii=False)
        == json.dumps(body, ensure_ascii=False).encode()
    )


@pytest.mark.parametrize("items", [0, 1, jsonslices.SLICE + 1])
def test_the_sliced_reading_is_json_loads(items: int) -> None:
    for text in (json.dumps(_body(items)), json.dumps(_body(items), ensure_ascii=False, indent=1)):
        assert jsonslices.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", " ", "{", "[1,", "{} x", '{"a": 1,}', "[1 2]", '{"a" 1}'])
def test_the_sliced_reading_refuses_what_json_loads_refuses(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as refused:
        jsonslices.loads(text)
    assert str(refused.value) == str(expected.value)


BIG = "x" * offload.THRESHOLD


def big_turn(raw: str = BIG) -> Turn:
    payload = ComposerInputPayload.model_construct(
        source=BIG, nodes=(TextNode.model_construct(start=0, end=len(BIG), raw=raw),)
    )
    return Turn(ComposerInputMessage(payload=payload), None, "", "u")


async def open_session() -> tuple[list[dict[str, Any]], Any]:
    """A session whose handler notes the payload it gets and replies with its length."""
    seen: list[dict[str, Any]] = []

    async def handler(ctx: HandlerContext) -> None:
        if isinstance(ctx.wake, InboxWake):
            seen.append(ctx.wake.message.payload)
            await ctx.reply(str(len(ctx.wake.message.payload["source"])))

    runtime = EmbeddedRuntime(EntityDefinition(type="t", handler=handler))
    return seen, await runtime.open("test:big", lambda update: None)


async def events_of(session: Any, turn: Turn) -> list[RuntimeEvent]:
    return [event async for event in session.run(turn)]


async def test_a_big_input_reaches_the_handler_as_a_small_one_does() -> None:
    seen, session = await open_session()
    turn = big_turn()
    assert await events_of(session, turn) == [MessageDelta(str(len(BIG))), MessageEnd()]
    assert seen == [payload_json(turn.message.payload)]


async def test_a_big_invalid_input_is_refused_before_its_handler() -> None:
    seen, session = await open_session()
    [refusal] = await events_of(session, big_turn(raw="y" * len(BIG)))
    assert isinstance(refusal, ErrorEvent) and "raw does not equal source.slice" in refusal.message
    assert seen == []


async def test_a_cancel_while_a_big_input_is_checked_keeps_its_handler_from_starting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen, session = await open_session()
    started, release = threading.Event(), threading.Event()
    check = embedded._checked

    def held(turn: Turn) -> Any:
        started.set()
        release.wait(10)
        return check(turn)

    monkeypatch.setattr(embedded, "_checked", held)
    turn = asyncio.ensure_future(events_of(session, big_turn()))
    assert await asyncio.to_thread(started.wait, 10)
    await session.cancel()
    release.set()
    assert await turn == [MessageEnd("cancelled")]
    assert seen == []


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("separators", [jsonslices.DEFAULT, (",", ":")])
def test_long_strings_are_encoded_in_slices_as_json_dumps_encodes_them(
    ensure_ascii: bool, separators: tuple[str, str]
) -> None:
    text = LINE * (3 * jsonslices.CHARS // len(LINE))  # escapes, emoji in every slice
    value = {"text": text, "nested": [text, {"k": text[:10]}], "n": None}
    expected = json.dumps(value, ensure_ascii=ensure_ascii, separators=separators).encode()
    assert jsonslices.dump_bytes(value, ensure_ascii, separators) == expected


def test_a_big_journal_entry_is_the_utf8_of_a_small_ones_text() -> None:
    body = {"message": {"text": TEXT, "attachments": []}, "key": "k"}
    entry = Entry("id", "webhook:c", "webhook", body, "answered", {"text": TEXT, "usage": None})
    assert entry.size() >= offload.THRESHOLD
    encoded = entry.encode()
    fields = {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry) if f.init}
    assert encoded == json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
    assert Entry.decode(encoded) == entry
