"""Permission requests as Block Kit buttons; the click goes back to the runtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from contract import utf16_len
from gateway.events import (
    MessageDelta,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
    RuntimeEvent,
)
from gateway.runtimes import Turn
from tests.slack.slack_fake import SECTION_LIMIT, WAIT, Message, Scripted, fake_slack, mention
from tests.slack.slack_harness import Script, ScriptedRuntime, ScriptedSession, slack_gateway

REQUEST = PermissionRequired(
    "p1",
    "Run `rm -rf build` <now>?",
    (PermissionOption("allow", "Allow once"), PermissionOption("deny", "Deny", "reject_once")),
)


def asking(request: PermissionRequired) -> Script:
    """A script that asks ``request`` and ends the turn with the answer."""

    async def script(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield request
        choice = await session.answer(request.request_id)
        yield MessageDelta(f"chose {choice}")
        yield MessageEnd()

    return script


ask = asking(REQUEST)


def click(message: Message, label: str, user: str, response_url: str) -> dict[str, Any]:
    """The block_actions payload Slack sends when ``user`` presses the button ``label``."""
    assert message.blocks is not None
    buttons = [
        e for block in message.blocks if block["type"] == "actions" for e in block["elements"]
    ]
    button = next(b for b in buttons if b["text"]["text"] == label)
    return {
        "type": "block_actions",
        "user": {"id": user, "team_id": "T1"},
        "team": {"id": "T1", "domain": "test"},
        "api_app_id": "A1",
        "token": "legacy",
        "trigger_id": "1.2.3",
        "container": {"type": "message", "message_ts": message.ts, "channel_id": message.channel},
        "channel": {"id": message.channel, "name": "general"},
        "message": {"ts": message.ts, "text": message.text, "blocks": message.blocks},
        "response_url": response_url,
        "actions": [
            {
                "type": "button",
                "block_id": "slashgate_permission",
                "action_id": button["action_id"],
                "text": button["text"],
                "value": button["value"],
                "action_ts": "1700000001.000000",
            }
        ],
    }


async def test_a_permission_request_is_answered_with_a_button(gateway_server):
    runtime = ScriptedRuntime(ask)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        await h.slack.event(mention("clean up", channel="C1", ts="40.1"))
        await fake.wait_for(lambda: any(m.blocks for m in fake.messages()))
        [request] = [m for m in fake.messages() if m.blocks]
        assert request.thread_ts == "40.1"
        assert "rm -rf build" in request.text and "&lt;now&gt;" in request.text
        labels = [e["text"]["text"] for e in request.blocks[1]["elements"]]  # type: ignore[index]
        assert labels == ["Allow once", "Deny"]

        # Somebody else may not answer for the one who asked.
        status, _ = await h.slack.action(click(request, "Deny", "U2", fake.response_url("u2")))
        [refusal] = await fake.wait_responses("u2")
        assert status == 200
        assert refusal["response_type"] == "ephemeral" and "<@U1>" in refusal["text"]

        status, _ = await h.slack.action(
            click(request, "Allow once", "U1", fake.response_url("u1"))
        )
        await h.channel.drain(WAIT)
        [done] = fake.responses_to("u1")

        # A second click on the answered request changes nothing.
        await h.slack.action(click(request, "Deny", "U1", fake.response_url("again")))
        await h.channel.drain(WAIT)
    assert status == 200
    assert done["replace_original"] is True and "*Allow once* (<@U1>)" in done["text"]
    assert [m.text for m in fake.messages() if not m.blocks] == ["chose allow"]
    assert fake.responses_to("again")[0]["text"].endswith("no longer pending")


async def test_a_request_with_a_huge_title_is_cut_to_fit_a_section(gateway_server):
    huge = PermissionRequired("p2", "Run " + "<x> & y " * 1000 + "?", REQUEST.options)
    runtime = ScriptedRuntime(asking(huge))
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        await h.slack.event(mention("clean up", channel="C2", ts="41.1"))
        await fake.wait_for(lambda: any(m.blocks for m in fake.messages()))
        [request] = [m for m in fake.messages() if m.blocks]
        assert request.blocks is not None
        section = request.blocks[0]["text"]["text"]
        # Slack took it (the fake answers invalid_blocks past the limit, as Slack does).
        assert utf16_len(section) <= SECTION_LIMIT
        assert section.startswith(":lock: *Run &lt;x&gt; &amp; y &lt;x&gt;")
        assert section.endswith(" …*")
        await h.slack.action(click(request, "Allow once", "U1", fake.response_url("u1")))
        await h.channel.drain(WAIT)
    assert [m.text for m in fake.messages() if not m.blocks] == ["chose allow"]


async def test_a_request_slack_refuses_as_blocks_is_posted_as_text(gateway_server):
    async def ask_then_end(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield REQUEST
        yield MessageEnd()

    runtime = ScriptedRuntime(ask_then_end)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        fake.script("chat.postMessage", Scripted(body={"ok": False, "error": "invalid_blocks"}))
        await h.slack.event(mention("clean up", channel="C3", ts="42.1"))
        await h.channel.drain(WAIT)
    [refused, *_] = fake.of("chat.postMessage")
    assert refused.params.get("blocks")
    request, done = fake.messages("C3")
    assert (request.thread_ts, request.blocks) == ("42.1", None)
    assert request.text == ":lock: *Run `rm -rf build` &lt;now&gt;?*\n• Allow once\n• Deny"
    assert done.text == "✅ Done."
