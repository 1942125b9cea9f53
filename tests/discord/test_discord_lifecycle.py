"""The channel's lifecycle: ``slashgate check`` reaches Discord with the token, readiness, a
busy session's refusal only for the user, the stop answered with 503, and a stop while the
Gateway connection is still being tried that leaves nothing running.
"""

from __future__ import annotations

import asyncio
import socket

from pydantic import SecretStr

from channels.discord.channel import DiscordChannel
from channels.discord.listener import Listener, gateway_bot
from contract import Command
from gateway.core import Gateway
from tests.conftest import make_settings, parity_runtime
from tests.slack.slack_harness import Held, ScriptedRuntime

from .fake import BOT_TOKEN, fake_discord
from .harness import WAIT, discord_gateway
from .interactions import PUBLIC_KEY, command
from .plain_harness import TOKEN

DEPLOY = (Command(name="deploy"),)


async def test_check_reaches_discord_with_the_bot_token() -> None:
    async with fake_discord() as fake:
        settings = make_settings(
            discord_token=SecretStr(BOT_TOKEN),
            discord_public_key=PUBLIC_KEY,
            discord_api_base=fake.api_base,
        )
        channel = DiscordChannel(Gateway(settings, parity_runtime()), settings)
        assert await channel.check() == f"application gw (id {4242})"
    [call] = fake.calls
    assert call.authorization == f"Bot {BOT_TOKEN}"


async def test_a_busy_sessions_refusal_is_for_the_user_alone(gateway_server) -> None:
    held = Held()
    runtime = ScriptedRuntime(held, DEPLOY)
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, runtime, busy_policy="reject") as h,
    ):
        assert await h.channel.readiness() is None
        first, second = command("deploy"), command("deploy")
        await h.interact(first)
        await held.started.wait()
        await h.interact(second)
        refused = await h.follow_up(second["token"])
        held.release.set()
        [done] = await h.replies(first["token"])
    assert refused.ephemeral and "busy" in refused.content.lower()
    assert fake.originals[second["token"]].deleted
    assert done.content == "done" and not done.ephemeral


async def test_while_stopping_interactions_are_refused_with_503(gateway_server) -> None:
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        h.channel.inputs.stopping = True
        assert await h.channel.readiness() == "stopping"
        status, body = await h.interact(command("deploy"))
        h.channel.inputs.stopping = False
        await h.channel.inputs.drain(WAIT)
    assert status == 503 and body["error"]["code"] == "service_unavailable"


def retrying() -> list[asyncio.Task[object]]:
    """hikari's tasks that connect a shard, trying again and again."""
    return [t for t in asyncio.all_tasks() if t.get_name().startswith("keep alive (shard ")]


async def test_a_stop_while_the_gateway_connection_is_tried_leaves_no_retries() -> None:
    with socket.socket() as closed:  # a port nothing listens on: hikari retries, on and on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    async with fake_discord() as fake:
        fake.gateway_url = f"ws://127.0.0.1:{port}"
        settings = make_settings(
            discord_token=SecretStr(TOKEN),
            discord_public_key=PUBLIC_KEY,
            discord_api_base=fake.api_base,
        )
        listener = Listener(gateway_bot(settings), None)  # type: ignore[arg-type]
        listener.start()
        for _ in range(500):  # hikari's own task, which nothing here can await
            if retrying():
                break
            await asyncio.sleep(0.01)
        assert retrying(), "hikari never tried to connect"
        await asyncio.wait_for(listener.stop(), WAIT)
    assert retrying() == []
