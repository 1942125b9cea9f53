"""A guild has commands of its own only while a conversation there lists commands the global
list lacks: they are published to that guild alone (Discord shows them beside the global
ones), removed when the list is back to the global one, and the most recently changed
guilds keep theirs. A list equal to the global one costs no call.
"""

from __future__ import annotations

import logging
from typing import Any

import hikari
import pytest
from pydantic import SecretStr

from channels.discord.bot import rest_bot
from channels.discord.sync import CommandSync
from contract import Command, CommandArgument
from gateway.events import SessionUpdated
from gateway.runtimes.base import RuntimeSession, UpdateListener
from tests.conftest import make_settings
from tests.slack.slack_harness import Held, ScriptedRuntime

from .fake import BOT_TOKEN, FakeDiscord, fake_discord
from .harness import Harness, discord_gateway
from .interactions import CHANNEL, GUILD, PUBLIC_KEY, command
from .plain_harness import ROOM, mentioning, plain_gateway

GO = Command(name="go", description="Go")
EXTRA = Command(
    name="extra",
    description="Only in this conversation",
    arguments=(CommandArgument(name="target", required=True),),
)


def guild_names(fake: FakeDiscord, guild: str) -> list[str] | None:
    """The names Discord lists in ``guild`` alone; None: never written."""
    listed = fake.commands.get(guild)
    return None if listed is None else [c["name"] for c in listed]


async def run(h: Harness, name: str, text: str = "", **where: Any) -> str:
    """``/name text`` sent in a guild channel; its reply, once the user sees it."""
    payload = command(name, ("arguments", 3, text), **where) if text else command(name, **where)
    await h.interact(payload)
    # Awaited in the fake, not by draining the channel's tasks: that would cancel the
    # publication the input's commands started.
    original = h.fake.originals[payload["token"]]
    await h.fake.wait(lambda: bool(original.content))
    return original.content


async def test_a_remembered_command_is_its_guilds_alone_until_forgotten(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        await run(h, "remember", "hi Hello there")
        await fake.wait(lambda: guild_names(fake, GUILD) == ["hi"])
        assert "hi" not in (guild_names(fake, "global") or [])
        assert await run(h, "hi") == "Hello there"  # read back with the guild's list
        await run(h, "forget", "hi")
        await fake.wait(lambda: guild_names(fake, GUILD) == [])  # the guild's own list goes
    assert len(fake.writes("PUT", f"/guilds/{GUILD}/")) == 2


async def test_a_conversation_begun_in_plain_messages_gets_its_guilds_list(gateway_server):
    async with plain_gateway(gateway_server) as p:
        fake = p.h.fake
        await p.send(mentioning("/remember hi Hello there"))  # no interaction in ROOM before
        await fake.wait(lambda: guild_names(fake, GUILD) == ["hi"])
        assert await run(p.h, "hi", channel=ROOM) == "Hello there"


async def test_a_guild_with_the_global_commands_costs_no_call(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        assert await run(h, "echo", "hello", guild_id="778", channel="556") == "hello"
        # Later another guild gets a command of its own; waiting for it shows the first
        # guild's lists were settled before: no call for them.
        await run(h, "remember", "hi Hello")
        await fake.wait(lambda: guild_names(fake, GUILD) == ["hi"])
    assert not [c for c in fake.calls if "/guilds/778/" in c.path]


async def test_a_guilds_list_is_its_most_recently_changed_conversations(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        await run(h, "remember", "alpha first")
        await fake.wait(lambda: guild_names(fake, GUILD) == ["alpha"])
        await run(h, "remember", "beta second", channel="556")
        await fake.wait(lambda: guild_names(fake, GUILD) == ["beta"])


async def test_a_first_input_in_another_channel_leaves_the_guilds_list_alone(gateway_server):
    """A conversation's first list is no change: it reset the guild's list to the global one,
    and ``/hi`` left the menu of the channel that has it.
    """
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        await run(h, "remember", "hi Hello there")
        await fake.wait(lambda: guild_names(fake, GUILD) == ["hi"])
        assert await run(h, "echo", "hello", channel="556") == "hello"  # the same guild
        # Another guild's change is published after anything the first input asked for.
        await run(h, "remember", "beta second", guild_id="778", channel="557")
        await fake.wait(lambda: guild_names(fake, "778") == ["beta"])
        assert guild_names(fake, GUILD) == ["hi"]
        assert await run(h, "hi") == "Hello there"
    assert len(fake.writes("PUT", f"/guilds/{GUILD}/")) == 1


async def test_only_the_most_recently_changed_guilds_keep_their_own_list(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        h.channel.sync.scopes.max_guilds = 1
        await run(h, "remember", "alpha first")
        await fake.wait(lambda: guild_names(fake, GUILD) == ["alpha"])
        await run(h, "remember", "beta second", guild_id="778", channel="556")
        await fake.wait(lambda: guild_names(fake, "778") == ["beta"])
        await fake.wait(lambda: guild_names(fake, GUILD) == [])


async def test_configured_guilds_get_their_whole_list_and_the_default_back(gateway_server):
    async with fake_discord() as fake:
        async with discord_gateway(gateway_server, fake, discord_guild_ids=(int(GUILD),)) as h:
            await fake.wait(lambda: guild_names(fake, GUILD) is not None)
            default = guild_names(fake, GUILD)
            assert default is not None and "agent" in default
            await run(h, "remember", "hi Hello")
            await fake.wait(lambda: guild_names(fake, GUILD) == [*default, "hi"])
            await run(h, "forget", "hi")
            await fake.wait(lambda: guild_names(fake, GUILD) == default)
    assert "global" not in fake.commands


class Growing(ScriptedRuntime):
    """Its sessions' commands are the test's to change (as an agent's that loads skills)."""

    def __init__(self) -> None:
        self.held = Held()
        self.held.release.set()
        super().__init__(self.held, (GO,))
        self.updates: dict[str, UpdateListener] = {}

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        self.updates[key] = updates
        return await super().open(key, updates)


async def test_a_guilds_refused_names_are_reported_once_and_typed_options_read_back(
    gateway_server, caplog
):
    caplog.set_level(logging.WARNING, "slashgate.discord")
    runtime = Growing()
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        await run(h, "go")
        grown = SessionUpdated(commands=(GO, EXTRA, Command(name="skill:triage")))
        runtime.updates[f"discord:{CHANNEL}"](grown)
        await fake.wait(lambda: guild_names(fake, GUILD) == ["extra"])
        [extra] = fake.commands[GUILD]
        assert [o["name"] for o in extra["options"]] == ["target", "file"]
        runtime.updates[f"discord:{CHANNEL}"](grown)  # the same again: said once
        payload = command("extra", ("target", 3, "web"))
        await h.interact(payload)
        await h.replies(payload["token"])
    assert runtime.held.sources[-1] == "/extra web"
    refused = [r.getMessage() for r in caplog.records if "cannot take" in r.getMessage()]
    assert refused == [
        f"Discord cannot take these command names in guild {GUILD} (a-z, 0-9, - and _, at "
        "most 32, 100 commands at most); they stay reachable as /agent <name>: skill:triage"
    ]


async def test_a_guild_discord_refused_is_published_at_the_next_change(gateway_server, caplog):
    caplog.set_level(logging.WARNING, "slashgate.discord")
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        fake.refuse_once.add(GUILD)
        await run(h, "remember", "alpha first")
        await fake.wait(lambda: len(fake.writes("PUT", f"/guilds/{GUILD}/")) == 1)
        # Another guild's change publishes its own list and the one Discord refused.
        await run(h, "remember", "beta second", guild_id="778", channel="556")
        await fake.wait(
            lambda: guild_names(fake, "778") == ["beta"] and guild_names(fake, GUILD) == ["alpha"]
        )
    failed = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert failed == [
        f"publishing the Discord commands of guild {GUILD} failed: HTTP 403 Missing Access"
    ]


async def test_a_global_list_discord_refuses_leaves_the_guilds_lists_published():
    async with fake_discord() as fake:
        settings = make_settings(
            discord_token=SecretStr(BOT_TOKEN),
            discord_public_key=PUBLIC_KEY,
            discord_api_base=fake.api_base,
        )
        rest = rest_bot(settings).rest
        assert isinstance(rest, hikari.impl.RESTClientImpl)
        sync = CommandSync(rest, "agent")
        sync.update((GO,))
        sync.scopes.seen(CHANNEL, int(GUILD))
        sync.conversation_changed(CHANNEL, (GO, EXTRA))  # a conversation with its own
        fake.refuse_once.add("global")
        rest.start()
        try:
            with pytest.raises(hikari.ForbiddenError):  # said, as before
                await sync.publish()
        finally:
            await rest.close()
    assert "global" not in fake.commands
    assert guild_names(fake, GUILD) == ["extra"]  # the guild's own list went all the same
