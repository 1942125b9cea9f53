"""Permission requests as buttons: only the user whose command asked can answer; the click
goes back to the runtime and the buttons go away.
"""

from __future__ import annotations

from contract import Command
from tests.slack.slack_harness import ScriptedRuntime
from tests.slack.test_slack_permissions import REQUEST, ask

from .fake import fake_discord
from .harness import WAIT, discord_gateway
from .interactions import click, command

UPDATE = 7  # the response type that changes the message the button is on
EPHEMERAL = 64


async def test_only_the_asking_user_answers_and_the_runtime_gets_the_choice(gateway_server):
    runtime = ScriptedRuntime(ask, (Command(name="deploy"),))
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        prompt = await h.follow_up(payload["token"])
        assert "Run `rm -rf build` <now>?" in prompt.content
        buttons = [b for row in prompt.components for b in row["components"]]
        assert [b["label"] for b in buttons] == ["Allow once", "Deny"]
        assert [b["style"] for b in buttons] == [3, 4]
        allow = buttons[0]["custom_id"]

        status, body = await h.discord.post(click(allow, user_id="222"))
        assert status == 200
        assert body["type"] == 4 and body["data"]["flags"] == EPHEMERAL
        assert "<@111>" in body["data"]["content"]

        status, body = await h.discord.post(click(allow))
        assert body["type"] == UPDATE
        assert not body["data"]["components"]  # cleared (hikari sends null)
        assert body["data"]["content"].endswith("→ **Allow once**")
        await h.channel.inputs.drain(WAIT)

        status, body = await h.discord.post(click(allow))  # answered already
        assert "no longer pending" in body["data"]["content"]
    assert runtime.sessions[0].answers[REQUEST.request_id].result() == "allow"
    assert fake.originals[payload["token"]].content == "chose allow"
