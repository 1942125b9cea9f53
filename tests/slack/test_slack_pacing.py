"""Through slack_sdk against the fake Slack: chat.postMessage keeps Slack's limit of about one
message a second per channel (short bursts of two), a chatty channel does not hold up another
channel's final reply, and a 429's Retry-After pauses every call to its channel (the other
channels go on).

Slack's per-channel limit runs x5 here (five a second): a span asserted is a lower bound (a
send never goes early), measured from before the first reply could go.
"""

from __future__ import annotations

import time

from channels.slack.pacing import POST_BURST
from tests.slack.slack_fake import WAIT, Call, FakeSlack, Scripted, fake_slack, mention
from tests.slack.slack_harness import ScriptedRuntime, deltas, slack_gateway

RATE = 5.0  # messages a second in one channel: Slack's one, x5
PATIENCE = 30.0  # seconds: a whole test's replies on a loaded machine


def posts(fake: FakeSlack, channel: str) -> list[Call]:
    return [c for c in fake.of("chat.postMessage") if c.params.get("channel") == channel]


async def test_replies_in_one_channel_go_in_a_short_burst_then_one_interval_apart(
    gateway_server,
):
    runtime = ScriptedRuntime(deltas("done"))
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, runtime, slack_rate_channel=RATE) as h,
    ):
        start = time.monotonic()
        for i in range(6):  # six threads of one channel: six conversations at once
            await h.slack.event(mention(f"hi {i}", channel="C1", ts=f"10.{i}"))
        await fake.wait_for(lambda: len(posts(fake, "C1")) == 6, PATIENCE)
        await h.channel.drain(WAIT)
    sent = posts(fake, "C1")
    assert sorted(c.params["thread_ts"] for c in sent) == [f"10.{i}" for i in range(6)]
    # A burst of two, then one an interval: the sixth no sooner than four intervals after.
    assert sent[-1].at - start >= (6 - POST_BURST) / RATE


async def test_a_chatty_channel_does_not_hold_up_another_channels_reply(gateway_server):
    runtime = ScriptedRuntime(deltas("done"))
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, runtime, slack_rate_channel=RATE) as h,
    ):
        for i in range(10):  # two seconds of replies in C1
            await h.slack.event(mention(f"hi {i}", channel="C1", ts=f"10.{i}"))
        await fake.wait_for(lambda: len(posts(fake, "C1")) >= 1, PATIENCE)
        await h.slack.event(mention("and me", channel="C2", ts="20.1"))
        await fake.wait_for(lambda: len(posts(fake, "C2")) == 1, PATIENCE)
        during = len(posts(fake, "C1"))
        await fake.wait_for(lambda: len(posts(fake, "C1")) == 10, PATIENCE)
        await h.channel.drain(WAIT)
    assert [m.text for m in fake.messages("C2")] == ["done"]
    assert during <= 5  # C2's reply went at once, not after C1's ten


async def test_a_retry_after_pauses_its_channel_and_not_the_others(gateway_server):
    runtime = ScriptedRuntime(deltas("done"))
    limited = Scripted(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": "1"})
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, runtime) as h,
    ):
        fake.script("chat.postMessage", limited)
        await h.slack.event(mention("first", channel="C1", ts="10.1"))
        [refused] = await fake.wait_calls("chat.postMessage")
        await h.slack.event(mention("second", channel="C1", ts="10.2"))
        await h.slack.event(mention("elsewhere", channel="C2", ts="20.1"))
        await fake.wait_for(lambda: len(posts(fake, "C1")) == 3, PATIENCE)
        await h.channel.drain(WAIT)
    assert refused.result == {"ok": False, "error": "ratelimited"}
    _, *after = posts(fake, "C1")
    assert {c.params["thread_ts"] for c in after} == {"10.1", "10.2"}
    # The other thread of the channel waited out the pause too, the other channel did not.
    assert min(c.at for c in after) - refused.at >= 1.0
    [other] = posts(fake, "C2")
    assert other.at < max(c.at for c in after)
    assert [m.text for m in fake.messages("C1")] == ["done", "done"]
