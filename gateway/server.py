"""The aiohttp server that mounts every enabled channel, plus health."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from aiohttp import web

from .channel import Channel
from .config import Settings
from .core import Gateway
from .runtimes import Runtime, build_runtime

log = logging.getLogger("slashgate")


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


class StartError(Exception):
    """The gateway could not start; the message says what failed."""


@dataclass
class Running:
    gateway: Gateway
    channels: list[Channel]
    app: web.Application
    url: str


def build_app(
    settings: Settings, runtime: Runtime | None = None
) -> tuple[web.Application, Gateway, list[Channel]]:
    from channels import build_channels

    gateway = Gateway(settings, runtime or build_runtime(settings))
    app = web.Application()
    app.router.add_get("/healthz", _healthz)
    channels = build_channels(gateway, settings)
    for channel in channels:
        channel.mount(app)
    return app, gateway, channels


@asynccontextmanager
async def running(settings: Settings, runtime: Runtime | None = None) -> AsyncIterator[Running]:
    """Start the gateway, its server and its channels; stop them all on exit."""
    app, gateway, channels = build_app(settings, runtime)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    started: list[Channel] = []
    try:
        try:
            await gateway.start()
            await runner.setup()
            site = web.TCPSite(runner, settings.host, settings.port)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            for channel in channels:
                await channel.start()
                started.append(channel)
        except Exception as exc:  # a port in use, a refused token, an agent that is not there
            raise StartError(f"{type(exc).__name__}: {exc}") from exc
        yield Running(gateway, channels, app, f"http://{settings.host}:{port}")
    finally:
        # Cancel the turns first, while the channels can still deliver their replies; then
        # the channels stop taking input and finish, then the server and the runtime go.
        await gateway.stop_runs()
        for channel in reversed(started):
            await channel.stop()
        await runner.cleanup()
        await gateway.stop()


async def serve(settings: Settings, runtime: Runtime | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with running(settings, runtime) as server:
        enabled = ", ".join(c.describe() for c in server.channels)
        print(f"slashgate listening on {server.url}", flush=True)
        print(f"runtime: {server.gateway.runtime.describe()}; channels: {enabled}", flush=True)
        await stop.wait()
    log.info("stopped")
