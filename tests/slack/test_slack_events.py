"""Mentions and direct messages: normalized text in, replies in the thread, no duplicates."""

from __future__ import annotations

from collections.abc import AsyncIterator

from gateway.events import MessageDelta, MessageEnd, RuntimeEvent
from gateway.runtimes import Turn
from tests.slack.slack_fake import BOT_USER, WAIT, direct_message, fake_slack, mention
from tests.slack.slack_harness import (
    Recorder,
    ScriptedRuntime,
    ScriptedSession,
    deltas,
    shown,
    slack_gateway,
)


async def test_mention_reaches_the_contract_decoded_and_is_answered_in_its_thread(gateway_server):
    recorder = Recorder()
    raw = (
        "check <https://example.com/a?b=1&amp;c=2|the docs> with <@U2|bob> in <#C9|ops>, "
        "<http://app.py|app.py> &amp; fix a &lt;b&gt; for <!here>"
    )
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        status, _ = await h.slack.event(mention(raw, channel="C7", ts="100.1"))
        await h.channel.drain(WAIT)
    assert status == 200
    assert recorder.sources == [
        "check the docs (https://example.com/a?b=1&c=2) with @bob in #ops, app.py & fix a <b> "
        "for @here"
    ]
    [reply] = fake.messages("C7")
    assert reply.thread_ts == "100.1"
    assert shown(reply, "got: " + recorder.sources[0])


async def test_each_thread_is_its_own_conversation(gateway_server):
    runtime = ScriptedRuntime(deltas("ok"))
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        await h.slack.event(mention("one", ts="200.1"))
        await h.slack.event(mention("two", ts="200.5", thread_ts="200.1"))
        await h.slack.event(mention("three", ts="300.1"))
        await h.channel.drain(WAIT)
    assert len(runtime.sessions) == 2
    assert sorted(m.thread_ts or "" for m in fake.messages()) == ["200.1", "200.1", "300.1"]


async def test_a_direct_message_chat_is_one_conversation_answered_in_threads(gateway_server):
    sources: list[str] = []

    async def record(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        sources.append(turn.message.payload.source)
        yield MessageDelta("ok")
        yield MessageEnd()

    runtime = ScriptedRuntime(record)
    dms = [
        direct_message("hello there", channel="D3", ts="400.1"),
        direct_message(f"<@{BOT_USER}> and you", channel="D3", ts="400.2"),
        direct_message("in a thread", channel="D3", ts="400.3", thread_ts="400.1"),
        direct_message("somebody else", channel="D4", ts="400.4", user="U2"),
    ]
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        for dm in dms:
            await h.slack.event(dm)
            await h.channel.drain(WAIT)
    assert sources == ["hello there", "and you", "in a thread", "somebody else"]
    assert len(runtime.sessions) == 2  # one chat with each person, not one per message
    assert [(m.channel, m.thread_ts) for m in fake.messages()] == [
        ("D3", "400.1"),
        ("D3", "400.2"),
        ("D3", "400.1"),
        ("D4", "400.4"),
    ]


async def test_bot_self_edited_and_channel_messages_are_ignored(gateway_server):
    recorder = Recorder()
    ignored = [
        direct_message("from a bot", ts="500.1", bot_id="B2"),
        direct_message("bot message", ts="500.2", subtype="bot_message"),
        direct_message("from myself", ts="500.3", user=BOT_USER),
        direct_message("edited", ts="500.4", subtype="message_changed"),
        {**direct_message("in a channel", ts="500.5", channel="C1"), "channel_type": "channel"},
        {**mention("a bot mentions us", ts="500.6"), "bot_id": "B2"},
        mention("", ts="500.7"),
    ]
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        for event in ignored:
            assert (await h.slack.event(event))[0] == 200
        await h.slack.event(direct_message("the only one", ts="500.9"))
        await h.channel.drain(WAIT)
    assert recorder.sources == ["the only one"]
    assert len(fake.messages()) == 1


async def test_a_retried_event_runs_once(gateway_server):
    recorder = Recorder()
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        event = mention("deploy it", ts="600.1")
        first = await h.slack.event(event, event_id="EvRETRY")
        retries = [
            await h.slack.event(event, event_id="EvRETRY", **{"X-Slack-Retry-Num": str(n)})
            for n in (1, 2, 3)
        ]
        # The same message delivered as a DM event and as a mention: one run as well.
        await h.slack.event(direct_message(f"<@{BOT_USER}> once", channel="D1", ts="600.2"))
        await h.slack.event({**mention("once", channel="D1", ts="600.2")})
        await h.slack.event(mention("sentinel", ts="600.3"))
        await h.channel.drain(WAIT)  # every run the requests started has finished
    assert first[0] == 200
    assert [status for status, _ in retries] == [200, 200, 200]
    assert recorder.sources == ["deploy it", "once", "sentinel"]
