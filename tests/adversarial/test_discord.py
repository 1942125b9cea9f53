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
from tests.discord.interactions import PATH, autocomplete, click, command, signed
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


def mutated(payload: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """``payload`` with the field at ``path`` set to ``value``."""
    where: Any = payload
    for step in path[:-1]:
        where = where[step]
    where[path[-1]] = value
    return payload


def echo() -> dict[str, Any]:
    return command("deploy", ("arguments", 3, "x"))


def attached() -> dict[str, Any]:
    item = {"id": "77", "filename": "a.txt", "size": 1, "url": "https://cdn.discordapp.com/a"}
    return command("deploy", ("file", 11, "77"), resolved={"attachments": {"77": item}})


# (what, the interaction, the field, its value): each a type Discord never sends there.
HOSTILE = [
    # A 500: the options were read into a dict keyed by their names (unhashable).
    ("option name object", echo, ("data", "options", 0, "name"), {"a": 1}),
    ("option name list", echo, ("data", "options", 0, "name"), ["arguments"]),
    # Acknowledged and run: the replies went to /webhooks/{app}/None/..., /['tok']/...
    ("token null", echo, ("token",), None),
    ("token list", echo, ("token",), ["tok"]),
    ("token number", echo, ("token",), 12345),
    ("token object", echo, ("token",), {"a": "b"}),
    ("token with a slash", echo, ("token",), "a/../../b"),
    # Accepted silently.
    ("channel_id number", echo, ("channel_id",), 555),
    ("guild_id number", echo, ("guild_id",), 777),
    ("version string", echo, ("version",), "1"),
    ("locale number", echo, ("locale",), 5),
    ("data.type string", echo, ("data", "type"), "1"),
    ("user id number", echo, ("member", "user", "id"), 111),
    ("id not digits", echo, ("id",), "x1"),
    ("no channel_id", echo, ("channel_id",), None),
    ("option type string", echo, ("data", "options", 0, "type"), "3"),
    ("attachment url number", attached, ("data", "resolved", "attachments", "77", "url"), 5),
]


async def test_every_field_the_gateway_reads_of_a_wrong_type_is_a_400_before_anything_runs(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder(DEPLOY)
    caplog.set_level(logging.WARNING)
    logged = 0
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        for what, make, path, value in HOSTILE:
            caplog.clear()
            status, answer = await h.discord.post(mutated(make(), path, value))
            assert status == 400, (what, answer)
            field = ".".join(str(p) for p in path)
            assert answer["error"] == {
                "code": "invalid_request",
                "message": answer["error"]["message"],
            }, what
            assert answer["error"]["message"].startswith(
                f"unprocessable Discord interaction: {field}: "
            ), (what, answer)
            # At most one line each (every 4xx's, rate-limited), with the reason, and no
            # traceback: there was a WARNING with a whole traceback for each.
            lines = [r for r in caplog.records if r.name.startswith("slashgate")]
            assert len(lines) <= 1, (what, [r.getMessage() for r in lines])
            assert all(r.exc_info is None for r in lines), what
            assert all(answer["error"]["message"] in r.getMessage() for r in lines), what
            logged += len(lines)
        await h.channel.inputs.drain(WAIT)
    assert logged >= 10  # the rate limit's burst: the first ones are all there
    assert recorder.sources == []
    assert not [c for c in fake.calls if "/webhooks/" in c.path]  # nothing acknowledged ran


async def test_autocomplete_and_buttons_with_a_field_of_a_wrong_type_are_a_400(
    gateway_server: ServerFactory,
) -> None:
    bodies = {
        "focused not a boolean": mutated(
            autocomplete("agent", "command", "dep"), ("data", "options", 0, "focused"), "yes"
        ),
        "custom_id a number": mutated(click("slashgate:permission:1"), ("data", "custom_id"), 1),
        "message content a list": mutated(click("x"), ("message", "content"), ["a"]),
    }
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        for what, payload in bodies.items():
            status, answer = await h.discord.post(payload)
            assert status == 400, (what, answer)


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
        if r.levelno >= logging.ERROR and r.name.startswith(("slashgate", "hikari"))
    ]
    assert failures == []
