"""The access policy on Discord, through hikari against the fake Discord, from its real
defaults: a stranger's direct-message command gets a pairing code (and the runtime nothing)
until ``slashgate access approve``, and again once revoked; a command in an unlisted server
gets no answer (the "thinking" response goes); in a listed one a non-owner's ``/mode`` is
refused ephemerally, and autocomplete offers it to owners alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.access.cli import access, stored
from tests.access.recording import Recording, pairing_code
from tests.conftest import ACCESS_DEFAULTS
from tests.discord.fake import Message, fake_discord
from tests.discord.harness import discord_gateway
from tests.discord.interactions import GUILD, USER, autocomplete, command, direct


async def test_a_strangers_direct_command_gets_a_code_and_runs_once_approved_until_revoked(
    gateway_server, tmp_path: Path
) -> None:
    runtime = Recording()
    settings, cli = stored(tmp_path)
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, runtime, **settings) as h,
    ):
        books = h.server.gateway.access.books
        books.max_age = 0  # each input reads the store (the 1 s promise: test_records.py)

        async def send(text: str) -> list[Message]:
            payload = direct(command("echo", ("arguments", 3, text)))
            await h.interact(payload)
            return await h.replies(payload["token"])

        [reply] = await send("hi")
        code = pairing_code(reply.content)
        assert runtime.inputs == []
        said = await access(cli, "approve", "discord", code)  # while the gateway runs
        assert said.status == 0, said.err
        [ran] = await send("hi")
        assert ran.content == "ran: /echo hi"
        await books.change("discord", lambda book: book.revoke(USER))  # as access revoke does
        [again] = await send("again")
        assert pairing_code(again.content) != code  # a stranger again
    assert runtime.texts == ["/echo hi"]


async def test_an_unlisted_server_is_not_answered_and_owners_alone_switch_modes(
    gateway_server,
) -> None:
    runtime = Recording()
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, runtime, **ACCESS_DEFAULTS) as h,
    ):
        payload = command("echo", ("arguments", 3, "hi"))
        await h.interact(payload)
        assert await h.replies(payload["token"]) == []
    assert runtime.inputs == []

    listed = {**ACCESS_DEFAULTS, "discord_allow_groups": [GUILD], "discord_owners": ["999"]}
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, runtime, **listed) as h,
    ):
        payload = command("mode", ("mode", 3, "code"))
        await h.interact(payload)
        [refused] = await h.replies(payload["token"])
    assert refused.content == "Slash command /mode is not allowed for you here."
    assert refused.ephemeral
    assert runtime.modes_set == []


async def test_autocomplete_offers_a_sender_only_what_they_may_run(gateway_server) -> None:
    def offered(body: dict[str, Any]) -> list[str]:
        return [c["value"].strip() for c in body["data"]["choices"]]

    unlisted = {**ACCESS_DEFAULTS, "discord_owners": ["999"], "discord_owner_commands": ["skill:*"]}
    listed = {**unlisted, "discord_allow_groups": [GUILD]}
    async with fake_discord() as fake:
        async with discord_gateway(gateway_server, fake, Recording(), **unlisted) as h:
            _, body = await h.discord.post(autocomplete("agent", "command", "/"))
        assert offered(body) == []  # a server not on the list learns nothing of the commands
        async with discord_gateway(gateway_server, fake, Recording(), **listed) as h:
            _, member = await h.discord.post(autocomplete("agent", "command", "/"))
            _, owner = await h.discord.post(autocomplete("agent", "command", "/", user_id="999"))
    assert "/echo" in offered(member) and "/help" in offered(member)
    assert not {"/mode", "/new", "/skill:deploy"} & set(offered(member))
    assert {"/mode", "/new", "/skill:deploy", "/echo"} <= set(offered(owner))
