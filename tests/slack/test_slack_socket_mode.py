"""Socket Mode: with an app token the same app takes its requests over a WebSocket."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from pydantic import SecretStr

from contract import Command
from tests.slack.slack_fake import APP_TOKEN, WAIT, command_body, event_body, fake_slack, mention
from tests.slack.slack_harness import Recorder, slack_gateway


async def test_events_and_commands_arrive_over_socket_mode(gateway_server):
    recorder = Recorder((Command(name="deploy"),))
    async with (
        fake_slack() as fake,
        slack_gateway(
            gateway_server, fake, recorder.runtime, slack_app_token=SecretStr(APP_TOKEN)
        ) as h,
    ):
        event = await fake.push("events_api", json.loads(event_body(mention("hi", ts="50.1"))))
        command = dict(
            parse_qsl(
                command_body(
                    "/agent", "deploy prod", channel="C2", response_url=fake.response_url("r")
                )
            )
        )
        slash = await fake.push("slash_commands", command)
        await fake.wait_for(
            lambda: {a.get("envelope_id") for a in fake.socket_acks} >= {event, slash}
        )
        await h.channel.drain(WAIT)
        assert "Socket Mode" in h.channel.describe()
    assert fake.of("apps.connections.open")[0].token == APP_TOKEN
    assert sorted(recorder.sources) == ["/deploy prod", "hi"]
    assert {(m.channel, m.thread_ts, m.text) for m in fake.messages()} == {
        ("C1", "50.1", "got: hi"),
        ("C2", None, "<@U1> ran `/agent deploy prod`\ngot: /deploy prod"),
    }
