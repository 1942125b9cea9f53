"""The Slack Web API failing as real servers and networks do (5xx in JSON or HTML, broken
connections, calls that time out), through slack-sdk against the fake: the user gets the
reply once, and a Slack that stays down costs one logged error, not a crash.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from channels.slack import web
from contract import Command
from gateway.backoff import Backoff
from gateway.events import (
    MessageDelta,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
    RuntimeEvent,
)
from gateway.runtimes import Turn
from tests.faults import trouble
from tests.slack.slack_fake import (
    WAIT,
    FakeSlack,
    Scripted,
    failure,
    fake_slack,
    mention,
    server_error,
)
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession, deltas, slack_gateway

DEPLOY = (Command(name="deploy", description="Deploy a build"),)
UNSUPPORTED = "Unsupported slash command /nope. Send /help to list available commands."


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "RETRY", Backoff(base=0.01))


def shown(fake: FakeSlack, channel: str = "C1") -> list[str]:
    return [m.text for m in fake.messages(channel)]


FAILURES = {
    "json-500": [server_error(500)],
    "json-503": [server_error(503, "service_unavailable")] * 2,
    "html-502": [failure("page", 502)] * 2,
    "html-200": [failure("page", 200)],
    "html-as-json": [Scripted(502, {}, {"Content-Type": "application/json"}, fault="page")],
    "dropped": [failure("drop")] * 3,
    "mixed": [failure("page", 503), failure("drop"), server_error(500)],
}


@pytest.mark.parametrize("failures", FAILURES.values(), ids=FAILURES.keys())
async def test_the_reply_arrives_once_after_transient_failures(
    gateway_server, caplog: pytest.LogCaptureFixture, failures: list[Scripted]
) -> None:
    with caplog.at_level(logging.INFO):
        async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
            fake.script("chat.postMessage", *failures)
            await h.slack.event(mention("/nope", channel="C1", ts="1.1"))
            await h.channel.drain(WAIT)
    assert shown(fake) == [UNSUPPORTED]
    assert len(fake.of("chat.postMessage")) == len(failures) + 1
    assert trouble(caplog.records) == []  # retries are INFO: the user got the reply


async def test_a_call_that_times_out_is_made_again(gateway_server) -> None:
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, platform_timeout=0.5) as h,
    ):
        fake.script("chat.postMessage", failure("hang"))
        await h.slack.event(mention("/nope", channel="C1", ts="1.1"))
        await h.channel.drain(WAIT)
    assert shown(fake) == [UNSUPPORTED]
    assert len(fake.of("chat.postMessage")) == 2


async def test_an_answer_cut_off_after_the_post_went_through_repeats_the_message(
    gateway_server,
) -> None:
    """The documented trade-off (docs/internals/decisions.md): Slack has no idempotency key for
    chat.postMessage, so a post whose answer was lost is sent again.
    """
    async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
        fake.script("chat.postMessage", failure("cut"))
        await h.slack.event(mention("/nope", channel="C1", ts="1.1"))
        await h.channel.drain(WAIT)
    assert shown(fake) == [UNSUPPORTED, UNSUPPORTED]


async def test_a_slack_that_stays_down_costs_one_logged_error(
    gateway_server, caplog: pytest.LogCaptureFixture
) -> None:
    attempts = web.RETRY.attempts
    with caplog.at_level(logging.INFO):
        async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
            fake.script("chat.postMessage", *[failure("page", 502)] * attempts)
            await h.slack.event(mention("/nope", channel="C1", ts="1.1"))
            await h.channel.drain(WAIT)
            assert len(fake.of("chat.postMessage")) == attempts
            assert shown(fake) == []
            [error] = trouble(caplog.records)
            assert error.levelno == logging.ERROR and error.exc_info is None
            assert "not delivered" in error.getMessage() and "HTTP 502" in error.getMessage()
            # Slack is back: the next message is answered as usual.
            await h.slack.event(mention("/nope", channel="C1", ts="2.1"))
            await h.channel.drain(WAIT)
            assert shown(fake) == [UNSUPPORTED]


async def test_a_long_reply_stops_at_the_first_chunk_that_cannot_be_delivered(
    gateway_server,
) -> None:
    reply = "first " * 500 + "\n\n" + "second " * 500
    runtime = ScriptedRuntime(deltas(reply), DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        posted = Scripted(body={"ok": True, "channel": "C1", "ts": "1700000000.999999"})
        fake.script("chat.postMessage", posted, *[failure("drop")] * web.RETRY.attempts)
        await h.slack.command("/deploy", "now", channel="C1", response_url=fake.response_url("r"))
        await h.channel.drain(WAIT)
    texts = shown(fake)  # the first chunk (posted, or shown by updating the preview)
    # The slash command's first message says who ran it, then the first chunk.
    lead, _, first = texts[0].partition("\n") if len(texts) == 1 else ("", "", "")
    assert lead.endswith("ran `/deploy now`")
    assert first.startswith("first") and "second" not in first
    assert len(fake.of("chat.postMessage")) == 1 + web.RETRY.attempts


async def test_the_permission_prompt_outlasts_an_html_error_page(gateway_server) -> None:
    request = PermissionRequired("p1", "Run ls?", (PermissionOption("ok", "Allow"),))

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield request
        yield MessageDelta(f"chose {await session.answer('p1')}")
        yield MessageEnd()

    runtime = ScriptedRuntime(script)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        fake.script("chat.postMessage", failure("page", 502))
        await h.slack.event(mention("go", channel="C1", ts="1.1"))
        prompts = await fake.wait_for(
            lambda: [m for m in fake.messages("C1") if m.blocks and "Run ls?" in m.text]
        )
        assert len(prompts) == 1
        await h.channel.gateway.answer_permission("slack", "C1:1.1", "p1", "ok")
        await h.channel.drain(WAIT)


async def test_a_failed_stream_start_is_dropped_and_the_reply_still_arrives_once(
    gateway_server, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(deltas("Hello ", "world"))) as h,
    ):
        fake.script("chat.startStream", failure("page", 502))
        await h.slack.event(mention("hi", channel="C1", ts="1.1"))
        await h.channel.drain(WAIT)
    assert len(fake.of("chat.startStream")) <= 1  # a preview is not tried again
    assert shown(fake) == ["Hello world"]
    assert not [r for r in caplog.records if r.exc_info]


async def test_closing_a_stream_outlasts_an_html_error_page(gateway_server) -> None:
    holder: dict[str, FakeSlack] = {}

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield MessageDelta("Hello ")
        await holder["fake"].wait_calls("chat.startStream")
        yield MessageDelta("world")
        yield MessageEnd()

    runtime = ScriptedRuntime(script)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        holder["fake"] = fake
        fake.script("chat.stopStream", failure("page", 502))
        await h.slack.event(mention("hi", channel="C1", ts="1.1"))
        await h.channel.drain(WAIT)
    [message] = fake.messages()
    assert (message.text, message.streamed, message.stopped) == ("Hello world", True, True)
    assert len(fake.of("chat.stopStream")) == 2
    assert fake.of("chat.postMessage") == []


async def test_a_response_url_answering_5xx_is_tried_again(gateway_server) -> None:
    async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
        fake.script("respond", Scripted(500), Scripted(503))
        await h.slack.command("/nope", "", channel="C1", response_url=fake.response_url("r"))
        await fake.wait_responses("r")
        await h.channel.drain(WAIT)
    [answer] = fake.responses_to("r")
    assert answer["response_type"] == "ephemeral" and "/nope" in answer["text"]
