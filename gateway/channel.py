"""The channel port: an adapter translates platform <-> core and renders replies."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from aiohttp import web

from .settings import CoreSettings

if TYPE_CHECKING:
    from .core import Gateway
    from .inbound import InboundMessage, ReplySink
    from .state import Entry


ErrorAnswer = Callable[[web.Request, Exception], web.StreamResponse | None]
"""A channel's own answer to a failure of one of its routes (the webhook's JSON
error bodies), or None to leave the failure as it is.
"""
ERROR_ANSWERS = web.AppKey("slashgate_error_answers", list[ErrorAnswer])


SettingsT = TypeVar("SettingsT", bound=CoreSettings)


class Channel(Generic[SettingsT]):
    """A channel, typed by its own settings model (``Channel[TelegramSettings]``): the
    gateway's settings and the channel's fields.
    """

    name: str = "channel"
    # The platform signs every request to this channel's routes (a secret header, a
    # signature over the body), and the routes check it: the server's checks for browsers
    # (Host, Origin, the proxy rule; slashgate/guard.py) leave them alone.
    signed: bool = False

    def __init__(self, gateway: Gateway, settings: SettingsT) -> None:
        self.gateway = gateway
        self.settings = settings

    def mount(self, app: web.Application) -> None:
        """Add the channel's routes to the gateway's aiohttp application."""

    async def start(self) -> None:
        """Start background work (polling, sockets, menu publishing) once the server runs."""

    async def stop(self) -> None:
        """Stop it; pending deliveries are finished or handed back to the platform."""

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        """A journaled input of this channel after a restart: the message and a sink that
        delivers its reply, or None when it cannot be answered any more.
        """
        return None

    async def readiness(self) -> str | None:
        """None when the channel is connected to its platform (``GET /readyz``); else what
        is missing. Cheap: called on every readiness probe, answered from what the channel
        knows already.
        """
        return None

    async def check(self) -> str:
        """Reach the platform once with the configured credentials (``slashgate check``):
        what was found (the bot's name, the workspace), or raise saying what failed. Called
        on a channel that was never started.
        """
        return "no platform to reach"

    def describe(self) -> str:
        return self.name

    def links(self, base: str) -> list[tuple[str, str]]:
        """What a person may open, by name, under the server's ``base`` URL: printed at
        start-up as ``name: address`` (the web chat's page, the API's base).
        """
        return []
