"""Signed Discord interactions that Discord itself would never send: fields of the wrong
JSON type are a 400 that runs nothing, and a subcommand's options are not dropped.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from contract import Command
from tests.conftest import ServerFactory
from tests.discord.fake import fake_discord
from tests.discord.harness import WAIT, discord_gateway
from tests.discord.interactions import PATH, command, signed
from tests.discord.plain_harness import message_create, plain_gateway
from tests.slack.slack_harness import Recorder

DEPLOY = (Command(name="deploy"),)


def renamed(name: Any) -> dict[str, Any]:
    payload = command("deploy")
    payload["data"]["name"] = name
    return payload


async def test_fields_of_the_wrong_type_are_a_400_and_run_nothing(
    gateway_server: ServerFactory,
) -> None:
    recorder = Recorder(DEPLOY)
    bodies = {
        # JSON's true was read as the PING type 1 and answered with a PONG.
        "type true": {"type": True},
        # These ran: the runtime got Python's repr ("/deploy {'a': 1}"), or "/None".
        "an object value": command("deploy", ("arguments", 3, {"a": 1})),
        "a list value": command("agent", ("command", 3, ["deploy", "x"])),
        "a null name": renamed(None),
        "a number name": renamed(5),
    }
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        for why, payload in bodies.items():
            body = json.dumps(payload).encode()
            request = h.discord.session.post(h.server.url + PATH, data=body, headers=signed(body))
            async with request as response:
                answer = await response.json()
                assert response.status == 400, (why, answer)
                assert answer["error"]["code"] == "invalid_request", why
        await h.channel.inputs.drain(WAIT)
        assert recorder.sources == []
        payload = command("deploy", ("arguments", 3, "next"))
        assert (await h.interact(payload))[0] == 200
        await h.replies(payload["token"])
    assert recorder.sources == ["/deploy next"]


async def test_a_subcommands_options_are_read_as_typed(gateway_server: ServerFactory) -> None:
    """The gateway publishes no subcommand, but an older list of the application may: its
    value ran as a bare ``/deploy``, the argument dropped.
    """
    value = {"name": "arguments", "type": 3, "value": "v"}
    sub = {"name": "canary", "type": 1, "options": [value]}
    payload = command("deploy")
    payload["data"]["options"] = [{"name": "web", "type": 2, "options": [sub]}]
    recorder = Recorder(DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        assert (await h.interact(payload))[0] == 200
        await h.replies(payload["token"])
    assert recorder.sources == ["/deploy web canary v"]


async def test_a_gateway_event_hikari_cannot_read_leaves_its_text_out_of_the_log(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # An author that is not an object: hikari fails reading the event and hands the error,
    # with the event's payload, to the loop's exception handler.
    broken = message_create("the words of a private message")
    broken["author"] = "nobody"
    async with plain_gateway(gateway_server) as plain:
        with caplog.at_level(logging.ERROR):
            await plain.send(broken)
            answered = await plain.say(message_create("/echo after"))
    assert answered[-1].content == "after"  # the session went on
    failures = [r for r in caplog.records if r.name == "asyncio"]
    assert failures, "hikari's failure reached the loop's handler and the log"
    assert "the words of a private message" not in caplog.text


async def test_a_message_whose_content_is_not_a_string_is_no_text(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # Read as given, an int content raised TypeError in the channel's listener.
    odd = message_create("placeholder")
    odd["content"] = 5
    async with plain_gateway(gateway_server) as plain:
        with caplog.at_level(logging.ERROR):
            await plain.send(odd)
            answered = await plain.say(message_create("/echo after"))
    assert answered[-1].content == "after"
    assert odd["id"] not in plain.taken  # no text, no file: not for the agent
    # hikari logs what its listeners raise (hikari.event_manager).
    failures = [
        r
        for r in caplog.records
        if r.name.startswith(("slashgate", "hikari")) and r.levelno >= logging.ERROR
    ]
    assert failures == []
