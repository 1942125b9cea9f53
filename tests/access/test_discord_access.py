"""The access policy on Discord, through hikari against the fake Discord, from its real
defaults: a stranger's direct-message command gets a pairing code (and the runtime nothing);
a command in an unlisted server gets no answer (the "thinking" response goes); in a listed
one a non-owner's ``/mode`` is refused ephemerally.
"""

from __future__ import annotations

from typing import Any

from tests.access.recording import Recording, pairing_code
from tests.conftest import ACCESS_DEFAULTS
from tests.discord.fake import fake_discord
from tests.discord.harness import discord_gateway
from tests.discord.interactions import GUILD, USER, command, user


def direct(payload: dict[str, Any]) -> dict[str, Any]:
    """The interaction as Discord sends it from a direct message: a user, no guild."""
    payload = {k: v for k, v in payload.items() if k not in ("guild_id", "member")}
    return {**payload, "user": user(USER), "channel": {"id": payload["channel_id"], "type": 1}}


async def test_a_strangers_direct_command_gets_a_code_and_runs_once_approved(
    gateway_server,
) -> None:
    runtime = Recording()
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, runtime, **ACCESS_DEFAULTS) as h,
    ):
        payload = direct(command("echo", ("arguments", 3, "hi")))
        await h.interact(payload)
        [reply] = await h.replies(payload["token"])
        code = pairing_code(reply.content)
        assert runtime.inputs == []
        await h.server.gateway.access.approve("discord", code)
        again = direct(command("echo", ("arguments", 3, "hi")))
        await h.interact(again)
        await h.replies(again["token"])
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
