"""Every Discord REST call counted in the gateway's metrics
(``slashgate_platform_requests_total``): each attempt hikari makes, its own retries included.

hikari's REST client sends through the aiohttp session it is given (``RESTClientImpl``'s
``client_session``), and aiohttp runs a session's middlewares on every request: the
channel's client gets a session of its own with the counting middleware. RESTBot makes its
client without one, so the channel makes its client itself, at start (a session needs the
running loop).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import aiohttp
import hikari
from yarl import URL

from channels.metering import counted
from gateway.api import Meter

from .settings import DiscordSettings

PLATFORM = "discord"
# A word of an API path: ids (digits) and tokens (longer, mixed case) are not.
_WORD = re.compile(r"@?[a-z][a-z0-9]{0,15}")


def method_of(api_base: str) -> Callable[[aiohttp.ClientRequest], str]:
    """A call's label: ``channels.messages.post`` for ``POST {api_base}/channels/601/messages``,
    the words of its path (never an id or a token) and its HTTP method.
    """
    prefix = URL(api_base).path.rstrip("/") + "/"

    def method(request: aiohttp.ClientRequest) -> str:
        path = request.url.path
        if not path.startswith(prefix):
            return "other"
        words = [w.lstrip("@") for w in path[len(prefix) :].split("/") if _WORD.fullmatch(w)]
        return ".".join([*words, request.method.lower()])

    return method


def metered_session(settings: DiscordSettings, metrics: Meter) -> aiohttp.ClientSession:
    """The session of the channel's REST client: each request counted."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=settings.platform_timeout),
        middlewares=(counted(metrics, PLATFORM, method_of(settings.discord_api_base)),),
    )


def metered_rest(
    bot: hikari.RESTBot, settings: DiscordSettings, session: aiohttp.ClientSession
) -> hikari.impl.RESTClientImpl:
    """hikari's REST client as RESTBot makes it, sending through ``session`` (the caller
    closes it after the client).
    """
    assert settings.discord_token is not None  # rest_bot checked it
    return hikari.impl.RESTClientImpl(
        cache=None,
        entity_factory=bot.entity_factory,
        executor=bot.executor,
        http_settings=bot.http_settings,
        proxy_settings=bot.proxy_settings,
        client_session=session,
        client_session_owner=False,
        token=settings.discord_token.get_secret_value(),
        token_type=hikari.TokenType.BOT,
        rest_url=settings.discord_api_base,
    )
