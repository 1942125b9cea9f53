"""Slash commands: the umbrella and per-command forms, acknowledged before anything runs."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from contract import Command
from gateway.state import StoreUnavailable
from tests.slack.slack_fake import WAIT, Scripted, command_body, fake_slack, signed_headers
from tests.slack.slack_harness import Held, Recorder, ScriptedRuntime, slack_gateway

DEPLOY = (Command(name="deploy", description="Deploy a build", hint="environment"),)


async def test_umbrella_and_per_command_forms_send_the_same_source(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        answers = [
            await h.slack.command(
                "/agent", "deploy prod", channel="C1", response_url=fake.response_url("a")
            ),
            await h.slack.command(
                "/agent", "/deploy prod", channel="C2", response_url=fake.response_url("b")
            ),
            await h.slack.command(
                "/deploy", "prod", channel="C3", response_url=fake.response_url("c")
            ),
            await h.slack.command("/deploy", "", channel="C4", response_url=fake.response_url("d")),
        ]
        await h.channel.drain(WAIT)
    assert [status for status, _ in answers] == [200, 200, 200, 200]
    assert [body for _, body in answers] == ["", "", "", ""]  # nothing shown as the ack
    assert sorted(recorder.sources) == ["/deploy", "/deploy prod", "/deploy prod", "/deploy prod"]
    # Results are posted in the channel, not in a thread, and not through response_url;
    # each says who ran what.
    shown = {m.channel: (m.thread_ts, m.text) for m in fake.messages()}
    assert shown == {
        "C1": (None, "<@U1> ran `/agent deploy prod`\ngot: /deploy prod"),
        "C2": (None, "<@U1> ran `/agent /deploy prod`\ngot: /deploy prod"),
        "C3": (None, "<@U1> ran `/deploy prod`\ngot: /deploy prod"),
        "C4": (None, "<@U1> ran `/deploy`\ngot: /deploy"),
    }
    assert fake.responses == []


async def test_the_umbrella_name_comes_from_the_settings(gateway_server):
    recorder = Recorder(DEPLOY)
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime, slack_umbrella_command="ask") as h,
    ):
        await h.slack.command("/ask", "deploy staging", response_url=fake.response_url("a"))
        await h.channel.drain(WAIT)
    assert recorder.sources == ["/deploy staging"]


async def test_rejections_are_ephemeral_and_never_reach_the_runtime(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        await h.slack.command("/agent", "nope", response_url=fake.response_url("nope"))
        await h.slack.command("/agent", "settings", response_url=fake.response_url("settings"))
        await h.slack.command("/agent", "", response_url=fake.response_url("empty"))
        await h.channel.drain(WAIT)
    assert recorder.sources == []
    assert fake.of("chat.postMessage") == []
    assert fake.responses_to("nope") == [
        {
            "response_type": "ephemeral",
            "text": "Unsupported slash command /nope. Send /help to list available commands.",
        }
    ]
    assert fake.responses_to("settings") == [
        {
            "response_type": "ephemeral",
            "text": "Unsupported slash command /settings. "
            "This command only runs in the interactive TUI.",
        }
    ]
    assert fake.responses_to("empty") == [  # the umbrella alone: how to use it
        {
            "response_type": "ephemeral",
            "text": "Usage: `/agent <command> [arguments]`, for example `/agent help` "
            "(which lists the commands).",
        }
    ]


async def test_the_ack_never_waits_for_the_runtime(gateway_server):
    slow = Held("deployed")
    runtime = ScriptedRuntime(slow, DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        status, body = await asyncio.wait_for(
            h.slack.command("/agent", "deploy prod", response_url=fake.response_url("a")), WAIT
        )
        # What the channel had sent to Slack when the ack came back: nothing yet.
        sent_before_ack = [call.method for call in fake.calls if call.method.startswith("chat.")]
        await asyncio.wait_for(slow.started.wait(), WAIT)
        slow.release.set()
        await h.channel.drain(WAIT)
    assert (status, body, sent_before_ack) == (200, "", [])
    assert [m.text for m in fake.messages()] == ["<@U1> ran `/agent deploy prod`\ndeployed"]


async def test_host_command_results_are_posted_in_the_channel(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        await h.slack.command("/agent", "help", channel="C5", response_url=fake.response_url("h"))
        await h.channel.drain(WAIT)
    [message] = fake.messages("C5")
    assert message.text.startswith("<@U1> ran `/agent help`\n*Gateway commands*")
    assert "• `/deploy &lt;environment&gt;` — Deploy a build" in message.text


async def test_a_channel_the_bot_is_not_in_gets_the_result_through_response_url(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        fake.script("chat.postMessage", Scripted(body={"ok": False, "error": "not_in_channel"}))
        await h.slack.command("/deploy", "prod", channel="C6", response_url=fake.response_url("r"))
        await h.channel.drain(WAIT)
    assert fake.responses_to("r") == [{"response_type": "in_channel", "text": "got: /deploy prod"}]
    assert fake.messages() == []


async def test_a_busy_session_rejects_a_slash_command_ephemerally(gateway_server):
    slow = Held("first done")
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(slow, DEPLOY)) as h,
    ):
        await h.slack.command("/deploy", "a", channel="C9", response_url=fake.response_url("a"))
        await asyncio.wait_for(slow.started.wait(), WAIT)
        await h.slack.command("/deploy", "b", channel="C9", response_url=fake.response_url("b"))
        [busy] = await fake.wait_responses("b")
        slow.release.set()
        await h.channel.drain(WAIT)
    assert busy == {
        "response_type": "ephemeral",
        "text": "Slash command /deploy could not run because the session is busy. "
        "Retry in a moment.",
    }
    assert [m.text for m in fake.messages("C9")] == ["<@U1> ran `/deploy a`\nfirst done"]


async def test_a_command_whose_text_says_payload_runs(gateway_server):
    # An interactivity request carries a ``payload`` field; a command's text may say the word.
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        answer = await h.slack.command(
            "/agent", "deploy payload", response_url=fake.response_url("p")
        )
        await h.channel.drain(WAIT)
    assert answer == (200, "")
    assert recorder.sources == ["/deploy payload"]


async def test_a_command_the_store_cannot_journal_is_not_acknowledged(
    gateway_server, monkeypatch: pytest.MonkeyPatch
):
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        journal = h.server.gateway.journal
        append = journal.store.append

        async def down(*args: Any, **kwargs: Any) -> None:
            raise StoreUnavailable("the store is down")

        monkeypatch.setattr(journal.store, "append", down)
        body = command_body("/agent", "deploy prod", response_url=fake.response_url("s"))
        headers = signed_headers(body, "application/x-www-form-urlencoded")
        async with h.slack.session.post(h.slack.url, data=body, headers=headers) as resp:
            refused = resp.status, resp.headers.get("Retry-After"), json.loads(await resp.text())
        # Slack delivers it again once the store answers: then it runs.
        monkeypatch.setattr(journal.store, "append", append)
        headers = signed_headers(body, "application/x-www-form-urlencoded")
        async with h.slack.session.post(h.slack.url, data=body, headers=headers) as resp:
            accepted = resp.status, await resp.text()
        await h.channel.drain(WAIT)
    error = {
        "code": "service_unavailable",
        "message": "the gateway's store is unavailable, retry later",
    }
    assert refused == (503, "1", {"error": error})
    assert accepted == (200, "")
    assert recorder.sources == ["/deploy prod"]
