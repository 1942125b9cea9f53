"""Web API calls, 429s and their retries, and repeated events show in ``GET /metrics``."""

from __future__ import annotations

from channels.slack import web
from gateway.backoff import Backoff
from tests.metrics import scrape
from tests.slack.slack_fake import WAIT, Scripted, failure, fake_slack, mention, server_error
from tests.slack.slack_harness import ScriptedRuntime, deltas, slack_gateway


async def test_api_calls_rate_limits_retries_and_repeated_events_are_counted(gateway_server):
    runtime = ScriptedRuntime(deltas("done"))
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        limited = Scripted(status=429, body={"ok": False, "error": "ratelimited"},
                           headers={"Retry-After": "0"})  # fmt: skip
        fake.script("chat.postMessage", limited)
        event = mention("hello", ts="500.1")
        await h.slack.event(event, event_id="Ev500")
        await h.slack.event(event, event_id="Ev500")  # Slack's retry of the same event
        await h.channel.drain(WAIT)
        seen = await scrape(h.server.url)
    [reply] = fake.messages("C1")
    assert reply.text == "done"

    assert seen.calls("slack", "auth.test", "ok") == 1
    limited = seen.calls("slack", "chat.postMessage", "rate_limited")
    assert (limited, seen.calls("slack", "chat.postMessage", "ok")) == (1, 1)
    assert seen.retries("slack", "chat.postMessage", "rate_limited") == 1
    assert seen.value("slashgate_dedupe_hits_total", channel="slack") == 1
    assert seen.value("slashgate_inputs_total", channel="slack", classification="not_slash") == 1
    assert seen.value("slashgate_replies_total", channel="slack", category="ok") == 1


async def test_broken_connections_and_timeouts_are_counted_as_network_errors(
    gateway_server, monkeypatch
):
    monkeypatch.setattr(web, "RETRY", Backoff(base=0.01))
    runtime = ScriptedRuntime(deltas("hi"))
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, runtime, platform_timeout=0.5) as h,
    ):
        broken = (failure("drop"), failure("hang"), server_error(503, "service_unavailable"))
        fake.script("chat.postMessage", *broken)
        await h.slack.event(mention("hello", ts="600.1"))
        await h.channel.drain(WAIT)
        seen = await scrape(h.server.url)
    assert [m.text for m in fake.messages("C1")] == ["hi"]
    assert seen.calls("slack", "chat.postMessage", "network_error") == 2
    assert seen.calls("slack", "chat.postMessage", "server_error") == 1
    assert seen.calls("slack", "chat.postMessage", "ok") == 1
