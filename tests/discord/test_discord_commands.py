"""Application commands from the live inventory: one bulk overwrite when Discord's list
differs (none when it is the same), the umbrella for names Discord refuses (reported once),
typed options where the inventory types arguments, and autocomplete from the contract.
"""

from __future__ import annotations

import logging

from contract import Command, CommandArgument
from gateway.api import InboundMessage
from tests.conftest import parity_runtime
from tests.slack.slack_harness import Recorder, ScriptedRuntime, deltas

from .fake import fake_discord
from .harness import WAIT, discord_gateway
from .interactions import autocomplete, command

AUTOCOMPLETE = 8


async def test_commands_are_published_once_and_not_again_when_unchanged(gateway_server, caplog):
    caplog.set_level(logging.WARNING, "slashgate.discord")
    async with fake_discord() as fake:
        async with discord_gateway(gateway_server, fake, parity_runtime()) as h:
            await h.channel.inputs.drain(WAIT)
        names = [c["name"] for c in fake.commands["global"]]
        assert names[0] == "agent"
        assert {"help", "new", "cancel", "status", "deploy", "pr-review", "worktree"} <= set(names)
        assert "skill:triage" not in names and "memory show" not in names
        puts = len(fake.writes("PUT"))
        assert puts >= 1
        async with discord_gateway(gateway_server, fake, parity_runtime()) as h:
            await h.channel.inputs.drain(WAIT)
        assert len(fake.writes("PUT")) == puts  # the same list: nothing written
    refused = [r for r in caplog.records if "cannot take these command names" in r.message]
    assert len(refused) == 2  # once per start, naming both
    assert "skill:triage, memory show" in refused[0].getMessage()


async def test_guild_scoped_publication(gateway_server):
    async with fake_discord() as fake:
        async with discord_gateway(
            gateway_server, fake, parity_runtime(), discord_guild_ids=(31, 32)
        ) as h:
            await h.channel.inputs.drain(WAIT)
    assert "global" not in fake.commands
    names = [c["name"] for c in fake.commands["31"]]
    assert names[0] == "agent" and "deploy" in names
    assert [c["name"] for c in fake.commands["32"]] == names


async def test_typed_arguments_become_typed_options_and_are_read_back_in_order(gateway_server):
    typed = Command(
        name="scale",
        arguments=(
            CommandArgument(name="service", required=True),
            CommandArgument(name="replicas", type="number"),
            CommandArgument(name="dry", type="boolean"),
        ),
    )
    runtime = ScriptedRuntime(deltas("ok"), (typed,))
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        await h.channel.inputs.drain(WAIT)
        [scale] = [c for c in fake.commands["global"] if c["name"] == "scale"]
        assert [(o["name"], o["type"], o.get("required")) for o in scale["options"]] == [
            ("service", 3, True),
            ("replicas", 10, False),
            ("dry", 5, False),
            ("file", 11, False),
        ]
        seen = []
        handle = h.server.gateway.handle

        async def spy(given, sink=None, entry=None):  # type: ignore[no-untyped-def]
            # The message, or what makes it (its files fetched).
            message = given if isinstance(given, InboundMessage) else await given
            seen.append(message.text)
            return await handle(message, sink, entry)

        h.server.gateway.handle = spy  # type: ignore[method-assign]
        payload = command("scale", ("service", 3, "web"), ("replicas", 10, 3.0), ("dry", 5, True))
        await h.interact(payload)
        await h.replies(payload["token"])
    assert seen == ["/scale web 3 true"]


async def test_autocomplete_answers_from_the_contracts_completion(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, parity_runtime()) as h:
        status, body = await h.discord.post(autocomplete("agent", "command", "de"))
        assert status == 200
        assert body["type"] == AUTOCOMPLETE
        values = [c["value"] for c in body["data"]["choices"]]
        assert values[0] == "deploy "
        status, body = await h.discord.post(autocomplete("agent", "command", "/pr"))
        assert body["data"]["choices"][0]["value"] == "/pr-review "


async def test_a_command_discord_still_lists_but_the_agent_dropped_is_unsupported(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, parity_runtime()) as h:
        payload = command("gone", ("arguments", 3, "now"))
        await h.interact(payload)
        [reply] = await h.replies(payload["token"])
    assert reply.ephemeral
    assert (
        reply.content == "Unsupported slash command /gone. Send /help to list available commands."
    )


async def test_the_umbrellas_text_is_plain_text_alone_and_arguments_after_a_command(
    gateway_server,
):
    recorder = Recorder((Command(name="review"),))
    replies = []
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        for options in (
            (("text", 3, "hello there"),),
            (("command", 3, "review"), ("text", 3, "the tests")),
            (),
        ):
            payload = command("agent", *options)
            await h.interact(payload)
            [reply] = await h.replies(payload["token"])
            replies.append(reply.content)
    assert recorder.sources == ["hello there", "/review the tests"]
    assert replies[-1] == "Invalid slash command. Enter a command name after /."
