"""Plain messages over Discord's Gateway connection (``discord_gateway``): hikari's GatewayBot
on the gateway's own event loop, beside the interactions endpoint, with the two intents that
carry direct and guild messages. Neither is privileged: Discord gives the content of a DM and
of a message that mentions the app without the message content intent, so the bot does not
ask for it (an application without it enabled would be refused at IDENTIFY).

hikari keeps the session alive: heartbeats, and a resume after a dropped socket, in which
Discord replays what was missed.
"""

from __future__ import annotations

import asyncio
import logging

import hikari

from .plain import said
from .plain_inputs import PlainInputs
from .settings import DiscordSettings

log = logging.getLogger("slashgate.discord")

INTENTS = hikari.Intents.DM_MESSAGES | hikari.Intents.GUILD_MESSAGES
SHARD_RETRIES = "keep alive (shard "  # the name of hikari's task that connects a shard


def gateway_bot(settings: DiscordSettings) -> hikari.GatewayBot:
    """hikari's Gateway bot, quiet (no banner, the gateway's logging left as it is) and
    without a cache: each message carries what the channel reads.
    """
    assert settings.discord_token is not None  # the channel is on
    token = settings.discord_token.get_secret_value()
    try:
        hikari.applications.get_token_id(token)
    except ValueError:  # hikari's message would not say which setting
        raise ValueError(
            "discord_token is not a bot token (its first part is the bot's id in base64): "
            "the Gateway connection (discord_gateway) needs one"
        ) from None
    return hikari.GatewayBot(
        token,
        banner=None,
        logs=None,
        suppress_optimization_warning=True,
        intents=INTENTS,
        auto_chunk_members=False,
        cache_settings=hikari.impl.CacheSettings(components=hikari.api.CacheComponents.NONE),
        rest_url=settings.discord_api_base,
        http_settings=hikari.impl.HTTPSettings(
            timeouts=hikari.impl.HTTPTimeoutSettings(total=settings.platform_timeout)
        ),
    )


class Listener:
    def __init__(self, bot: hikari.GatewayBot, inputs: PlainInputs) -> None:
        self.bot = bot
        self.inputs = inputs
        self.me: int | None = None  # the bot's user id, from READY
        self._task: asyncio.Task[None] | None = None
        self._before: set[asyncio.Task[object]] = set()  # the loop's tasks before the start

    @property
    def connected(self) -> bool:
        shards = self.bot.shards.values()
        return bool(shards) and all(s.is_connected for s in shards)

    def start(self) -> None:
        """Connect in the background: the server serves meanwhile, and hikari retries."""
        self.bot.subscribe(hikari.ShardReadyEvent, self._ready)
        self.bot.subscribe(hikari.DMMessageCreateEvent, self._message)
        self.bot.subscribe(hikari.GuildMessageCreateEvent, self._message)
        self._before = asyncio.all_tasks()
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None and not self.bot.shards:  # still connecting
            self._task.cancel()
        if self.bot.is_alive:
            await self.bot.close()
        if self._task is not None:
            await asyncio.wait({self._task})
        # A shard that never connected is not the bot's yet: close() leaves its retries
        # running (hikari shields them), until the process exits. They go with the bot.
        retrying = [
            task
            for task in asyncio.all_tasks() - self._before
            if task.get_name().startswith(SHARD_RETRIES) and not task.done()
        ]
        for task in retrying:
            task.cancel()
        if retrying:
            await asyncio.wait(retrying)

    async def _run(self) -> None:
        try:
            await self.bot.start(check_for_updates=False)
            if self.bot.is_alive:
                await self.bot.join()  # raises what ended the session for good
        except Exception as exc:  # a refused token (4004) or intents (4014): not retried
            log.error("the Discord Gateway connection ended: %s", exc)

    async def _ready(self, event: hikari.ShardReadyEvent) -> None:
        self.me = int(event.my_user.id)

    async def _message(self, event: hikari.MessageCreateEvent) -> None:
        if self.me is None:
            return
        message = said(event.message, self.me)
        if message is not None:
            await self.inputs.accept(message)
