"""Servers under load, each in its own process: ``bare`` (a plain aiohttp JSON echo) or
``gateway`` (slashgate on the embedded runtime). Prints ``listening on URL``.
"""

from __future__ import annotations

import asyncio
import os
import sys

from aiohttp import web


async def bare_handler(request: web.Request) -> web.Response:
    data = await request.json()
    return web.json_response(
        {"conversation": data["conversation"], "reply": {"text": data["text"]}}
    )


async def main(kind: str, cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})
    if kind == "bare":
        app = web.Application()
        app.router.add_post("/v1/messages", bare_handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        print(f"listening on http://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()
    else:
        from gateway.config import Settings
        from gateway.server import running

        async with running(Settings(port=0, log_level="WARNING")) as server:
            print(f"listening on {server.url}", flush=True)
            await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
