"""The channel port: an adapter translates platform <-> core and renders replies."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from .config import Settings
    from .core import Gateway


class Channel:
    name: str = "channel"

    def __init__(self, gateway: Gateway, settings: Settings) -> None:
        self.gateway = gateway
        self.settings = settings

    def mount(self, app: web.Application) -> None:
        """Add the channel's routes to the gateway's aiohttp application."""

    async def start(self) -> None:
        """Start background work (polling, sockets, menu publishing) once the server runs."""

    async def stop(self) -> None:
        """Stop it; pending deliveries are finished or handed back to the platform."""

    def describe(self) -> str:
        return self.name
