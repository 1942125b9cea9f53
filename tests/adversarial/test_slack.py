"""Slack (slack-bolt against the fake Slack) under hostile input: slash commands past 4,000
characters and messages of 40,000, in every kind of hard text; lone surrogates in its JSON;
header bytes outside ASCII. Each gets its documented reply or a clear 4xx, /healthz keeps
answering, and the conversation goes on.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from channels.slack.mrkdwn import TEXT_LIMIT
from contract import Command
from tests.conftest import ServerFactory
from tests.slack.slack_fake import (
    Call,
    FakeSlack,
    action_body,
    command_body,
    direct_message,
    event_body,
    fake_slack,
    mention,
    signed_headers,
)
from tests.slack.slack_harness import Harness, Recorder, slack_gateway

from .common import BOUND, FLAVORS, fill, healthz_watch, raw_request

ECHO = (Command(name="echo", description="Say it again", hint="text"),)
POSTING = ("chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream")


def squeeze(text: str) -> str:
    """``text`` without its white space: where a long reply is cut, it may be dropped."""
    return "".join(text.split())


def posted(fake: FakeSlack) -> list[Call]:
    return [call for method in POSTING for call in fake.of(method)]


def shown_text(call: Call) -> str:
    return str(call.params.get("markdown_text") or call.params.get("text") or "")


async def settle(h: Harness) -> None:
    """Every input taken so far has been answered (bounded: a hang fails, it does not block)."""
    await asyncio.wait_for(h.channel.drain(BOUND), BOUND + 5)


async def next_works(h: Harness, recorder: Recorder, channel: str) -> None:
    """The same conversation takes a short command as if nothing had happened."""
    status, _ = await h.slack.command(
        "/echo", "next one", channel=channel, response_url=h.fake.response_url("next")
    )
    assert status == 200
    await settle(h)
    assert recorder.sources[-1] == "/echo next one"
    assert any("got: /echo next one" in shown_text(c) for c in posted(h.fake))


def check_replies(fake: FakeSlack, expected: str) -> None:
    """Every message within Slack's limit, and all of ``expected`` shown across them."""
    calls = posted(fake)
    assert calls, "nothing was posted"
    assert all(c.result.get("ok") for c in calls), [c.result for c in calls if not c.result["ok"]]
    longest = max(len(shown_text(c)) for c in calls)
    assert longest <= TEXT_LIMIT, longest
    finals = {}  # what each message shows in the end: its last update, or its stream joined
    for call in calls:
        ts = call.result.get("ts") or call.params.get("ts")
        if call.method == "chat.appendStream":
            finals[ts] = finals.get(ts, "") + shown_text(call)
        else:
            finals[ts] = shown_text(call)
    # Markdown replaces NUL with U+FFFD (CommonMark's rule): the one character that changes.
    assert squeeze(expected.replace("\x00", "\ufffd")) in squeeze("".join(finals.values()))


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
@pytest.mark.parametrize("form", ["umbrella", "command"])
async def test_a_slash_command_past_4000_characters(
    gateway_server: ServerFactory, flavor: str, form: str
) -> None:
    text = fill(flavor, 4_500)
    recorder = Recorder(ECHO)
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime) as h,
    ):
        async with healthz_watch(h.server.url):
            command, args = ("/agent", "/echo " + text) if form == "umbrella" else ("/echo", text)
            status, body = await h.slack.command(
                command, args, channel="C1", response_url=fake.response_url("long")
            )
            assert (status, body) == (200, "")
            await settle(h)
        [source] = recorder.sources
        assert source.startswith("/echo ") and squeeze(source) == squeeze("/echo" + text)
        check_replies(fake, "got: " + source)
        await next_works(h, recorder, "C1")


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
@pytest.mark.parametrize("where", ["direct", "mention"])
async def test_a_message_of_40000_characters(
    gateway_server: ServerFactory, flavor: str, where: str
) -> None:
    text = fill(flavor, 40_000)
    recorder = Recorder(ECHO)
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime) as h,
    ):
        async with healthz_watch(h.server.url):
            event = (
                direct_message(text, channel="D1", ts="100.1")
                if where == "direct"
                else mention(text, channel="C1", ts="100.1")
            )
            status, _ = await h.slack.event(event)
            assert status == 200
            await settle(h)
        [source] = recorder.sources
        assert squeeze(source) == squeeze(text)
        check_replies(fake, "got: " + source)
        await next_works(h, recorder, "C1")


async def test_lone_surrogates_in_slack_json_are_a_400_naming_the_field(
    gateway_server: ServerFactory,
) -> None:
    recorder = Recorder(ECHO)
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime) as h,
        healthz_watch(h.server.url),
    ):
        event = event_body(mention("/echo \\ud800", ts="200.1")).replace("\\\\", "\\")
        status, answer = await h.slack.post(event, "application/json")
        assert status == 400, answer
        assert json.loads(answer)["error"]["message"].startswith("event.text: not valid Unicode")
        action = {
            "type": "block_actions",
            "user": {"id": "U1"},
            "actions": [{"action_id": "slashgate.permission:x", "value": "\\udfff"}],
        }
        status, answer = await h.slack.post(
            action_body(action).replace("%5C%5C", "%5C"), "application/x-www-form-urlencoded"
        )
        assert status == 400, answer
        assert json.loads(answer)["error"]["message"].startswith("actions.0.value: not valid")
        # A slash command is a form: bytes that are not UTF-8 arrive as U+FFFD, as in bolt.
        form = command_body("/echo", "x", response_url=fake.response_url("c"))
        status, _ = await h.slack.post(
            form.replace("text=x", "text=%ED%A0%80"), "application/x-www-form-urlencoded"
        )
        assert status == 200
        await settle(h)
        assert recorder.sources == ["/echo \ufffd\ufffd\ufffd"]
        await next_works(h, recorder, "C1")


@pytest.mark.parametrize(
    "replace",
    [
        {"X-Slack-Signature": b"v0=\xff\xfe"},
        {"X-Slack-Request-Timestamp": b"17\xff00000000"},
        {"X-Slack-Request-Timestamp": "١٧٠٠٠٠٠٠٠٠".encode()},  # digits int() takes
        {"X-Slack-Signature": "v0=é".encode()},
    ],
    ids=["signature-bytes", "timestamp-bytes", "timestamp-digits", "signature-utf8"],
)
async def test_signature_headers_outside_ascii_are_a_401(
    gateway_server: ServerFactory, replace: dict[str, bytes]
) -> None:
    recorder = Recorder(ECHO)
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime) as h,
        healthz_watch(h.server.url),
    ):
        body = command_body("/echo", "hi", response_url=fake.response_url("c"))
        headers: dict[str, Any] = {
            k: v.encode()
            for k, v in signed_headers(body, "application/x-www-form-urlencoded").items()
        }
        headers.update(replace)
        head = b"\r\n".join(
            [b"POST /slack/events HTTP/1.1", *(k.encode() + b": " + v for k, v in headers.items())]
        )
        status, answer = await raw_request(h.server.url, head, body.encode())
        assert status == 401, answer
        assert json.loads(answer)["error"]["code"] == "unauthorized"
        assert recorder.sources == []
        await next_works(h, recorder, "C1")
