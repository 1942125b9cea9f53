"""Replies: streamed (chat.startStream or throttled chat.update), rendered, chunked, retried."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from channels.slack.mrkdwn import TEXT_LIMIT, to_mrkdwn
from channels.text import chunks
from contract import Command, utf16_len
from gateway.events import ErrorEvent, MessageDelta, MessageEnd, RuntimeEvent
from gateway.runtimes import RuntimeSession, Turn
from gateway.runtimes.base import UpdateListener
from tests.slack.slack_fake import WAIT, FakeSlack, Scripted, fake_slack, mention
from tests.slack.slack_harness import (
    Script,
    ScriptedRuntime,
    ScriptedSession,
    deltas,
    slack_gateway,
)

LEAD = "<@U1> ran `/deploy prod`\n"  # a slash command's reply says who ran what
DEPLOY = (Command(name="deploy", description="Deploy a build"),)


async def test_thread_replies_stream_with_chat_start_append_stop(gateway_server):
    holder: dict[str, object] = {}

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        fake = holder["fake"]
        yield MessageDelta("Hello ")
        await fake.wait_calls("chat.startStream")  # type: ignore[attr-defined]
        yield MessageDelta("**world**")
        await fake.wait_calls("chat.appendStream")  # type: ignore[attr-defined]
        yield MessageDelta("!")
        yield MessageEnd()

    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(script)) as h,
    ):
        holder["fake"] = fake
        h.channel.outbox.update_interval = 0
        await h.slack.event(mention("hi", channel="C1", ts="10.1"))
        await h.channel.drain(WAIT)
    start = fake.of("chat.startStream")[0].params
    assert start["thread_ts"] == "10.1"
    assert (start["recipient_user_id"], start["recipient_team_id"]) == ("U1", "T1")
    [message] = fake.messages()
    assert (message.text, message.streamed, message.stopped) == ("Hello **world**!", True, True)
    assert fake.of("chat.postMessage") == []


@pytest.mark.parametrize(
    ("error", "streams_again"),
    [
        ("unknown_method", False),  # the app cannot stream at all: no reply tries again
        ("missing_scope", False),
        ("invalid_arguments", True),  # about this reply (or its channel) only
        ("restricted_action", True),
    ],
)
async def test_after_a_chat_start_stream_error_a_message_is_updated_instead(
    gateway_server, error, streams_again
):
    holder: dict[str, object] = {}

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        fake = holder["fake"]
        shown = len(fake.messages())  # type: ignore[attr-defined]
        yield MessageDelta("Hello ")
        await fake.wait_for(lambda: len(fake.messages()) > shown)  # type: ignore[attr-defined]
        yield MessageDelta("**world** & <you>")
        yield MessageEnd()

    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(script)) as h,
    ):
        holder["fake"] = fake
        fake.script("chat.startStream", Scripted(body={"ok": False, "error": error}))
        await h.slack.event(mention("one", channel="C1", ts="20.1"))
        await h.channel.drain(WAIT)
        await h.slack.event(mention("two", channel="C2", ts="21.1"))
        await h.channel.drain(WAIT)
    updated = ("Hello *world* &amp; &lt;you&gt;", False)  # mrkdwn, by chat.update
    streamed = ("Hello **world** & <you>", True)  # Markdown, by chat.startStream
    assert len(fake.of("chat.startStream")) == (2 if streams_again else 1)
    previews = [c.params["text"] for c in fake.of("chat.postMessage")]
    assert previews == (["Hello"] if streams_again else ["Hello", "Hello"])
    assert [(m.text, m.streamed) for m in fake.messages()] == [
        updated,
        streamed if streams_again else updated,
    ]


async def deploy_streaming(
    gateway_server, script_for: Callable[[FakeSlack], Script], update_interval: float
) -> FakeSlack:
    """Run ``/deploy prod`` with the script ``script_for(fake)``; the fake once it is done."""
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(script_for(fake), DEPLOY)) as h,
    ):
        h.channel.outbox.update_interval = update_interval
        await h.slack.command("/deploy", "prod", response_url=fake.response_url("r"))
        await h.channel.drain(WAIT)
    return fake


async def test_previews_show_the_reply_while_it_is_written(gateway_server):
    def script_for(fake: FakeSlack) -> Script:
        async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
            yield MessageDelta("part one")
            await fake.wait_calls("chat.postMessage")
            yield MessageDelta(", part two")
            await fake.wait_for(
                lambda: any(
                    c.params.get("text") == f"{LEAD}part one, part two"
                    for c in fake.of("chat.update")
                )
            )
            yield MessageDelta(", end")
            yield MessageEnd()

        return script

    fake = await deploy_streaming(gateway_server, script_for, update_interval=0)
    assert fake.of("chat.postMessage")[0].params["text"] == f"{LEAD}part one"
    assert [m.text for m in fake.messages()] == [f"{LEAD}part one, part two, end"]


async def test_chat_update_is_throttled(gateway_server):
    def script_for(fake: FakeSlack) -> Script:
        async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
            yield MessageDelta("0")
            await fake.wait_calls("chat.postMessage")
            for n in range(1, 30):
                await asyncio.sleep(0)  # let the channel run between deltas
                yield MessageDelta(f" {n}")
            yield MessageEnd()

        return script

    fake = await deploy_streaming(gateway_server, script_for, update_interval=60.0)
    # 30 deltas: the preview, then within the interval only the final update.
    assert len(fake.of("chat.postMessage")) == 1
    assert len(fake.of("chat.update")) == 1


async def test_long_replies_are_cut_under_slacks_limit_after_rendering(gateway_server):
    paragraphs = [f"**{n}** " + "x & y < z " * 300 for n in range(4)]
    reply = "\n\n".join(paragraphs)
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(deltas(reply), DEPLOY)) as h,
    ):
        await h.slack.command("/deploy", "prod", channel="C8", response_url=fake.response_url("r"))
        await h.channel.drain(WAIT)
    shown = [m.text for m in fake.messages("C8")]
    assert len(shown) > 1
    assert all(utf16_len(text) <= TEXT_LIMIT for text in shown)
    # The first message says who ran what, and still fits.
    assert shown[0].startswith(LEAD)
    assert [shown[0].removeprefix(LEAD), *shown[1:]] == chunks(
        to_mrkdwn(reply), TEXT_LIMIT - len(LEAD)
    )
    body = shown[0].removeprefix(LEAD)
    assert "&amp;" in body and "&lt;" in body and "<" not in body.replace("&lt;", "")


async def test_rate_limits_are_waited_out_and_retried(gateway_server):
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(deltas("deployed"), DEPLOY)) as h,
    ):
        fake.script(
            "chat.postMessage",
            Scripted(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"}),
        )
        await h.slack.command("/deploy", "prod", response_url=fake.response_url("r"))
        await h.channel.drain(WAIT)
    first, second = fake.of("chat.postMessage")
    assert second.at - first.at >= 1.0
    assert [m.text for m in fake.messages()] == [f"{LEAD}deployed"]


async def test_failures_are_one_message_with_the_warning_prefix_for_plain_text(gateway_server):
    async def failing(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield ErrorEvent("generic", "boom")

    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(failing, DEPLOY)) as h,
    ):
        await h.slack.event(mention("hello", channel="C1", ts="30.1"))
        await h.slack.command("/deploy", "prod", channel="C2", response_url=fake.response_url("r"))
        await h.channel.drain(WAIT)
    assert [m.text for m in fake.messages("C1")] == [":warning: The request failed: boom"]
    assert [m.text for m in fake.messages("C2")] == [f"{LEAD}Slash command /deploy failed: boom"]
    assert fake.responses == []


class UnreachableRuntime(ScriptedRuntime):
    """Opening a session fails: an error before any turn runs."""

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        raise RuntimeError("the agent is not installed")


async def test_a_runtime_that_cannot_open_a_session_is_one_warning(gateway_server):
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, UnreachableRuntime(deltas("never"))) as h,
    ):
        await h.slack.event(mention("hello", channel="C4", ts="31.1"))
        await h.channel.drain(WAIT)
    assert [(m.thread_ts, m.text) for m in fake.messages("C4")] == [
        ("31.1", ":warning: The request failed: the agent is not installed")
    ]
