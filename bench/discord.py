"""The Discord channel against a hikari bot answering the same command, in one run.

``python bench/discord.py`` starts two servers, each in a process of its own, against one fake
Discord REST API in this process:

- ``slashgate``: the gateway with its Discord channel on the embedded demo runtime; the
  command is ``/echo arguments:hello`` (journaled, deferred, answered by editing the
  original response);
- ``hikari``: a ``hikari.RESTBot`` whose interaction server is mounted in an aiohttp app, its
  listener written as hikari documents it: it yields the deferred response, then edits the
  original response with the text.

Each round (the two servers alternate) sends signed interactions from ``--workers`` users,
each waiting for its reply (the edit reaching the fake) before the next command. Printed:
the deferred acknowledgement's latency (one command at a time: median and p95, ms), and the
server's CPU time per command (utime + stime from ``/proc/<pid>/stat``, ms) with commands
per second, as the median over the rounds, and the ratio slashgate / hikari.

``python bench/discord.py serve KIND API PUBLIC_KEY`` is one server (it prints ``listening on
URL``). Nothing here is a test: no figure fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from nacl.signing import SigningKey

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import Server, cpu_seconds  # noqa: E402
from bench.servers import serve_app, serve_slashgate  # noqa: E402

TOKEN = "bench-discord-token"
APPLICATION = "4242"
REPLY_WAIT = 30.0  # seconds: a reply that takes longer means the server is broken
USER = {"id": "111", "username": "bench", "discriminator": "0", "avatar": None}


# -- the fake Discord REST API (in the bench's process: its CPU is never the server's) ------


class FakeDiscord:
    """Just enough of Discord for both bots: the application, the command list, and the
    original response's edit, which resolves the waiter of its interaction token.
    """

    def __init__(self) -> None:
        self.waiters: dict[str, asyncio.Future[str]] = {}
        self.commands: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        api = "/api/v10"
        app.router.add_get(f"{api}/oauth2/applications/@me", self._application)
        app.router.add_get(f"{api}/applications/{{app}}/commands", self._get_commands)
        app.router.add_put(f"{api}/applications/{{app}}/commands", self._put_commands)
        hook = f"{api}/webhooks/{{app}}/{{token}}"
        app.router.add_patch(f"{hook}/messages/@original", self._edit)
        # A refusal (busy) deletes the "thinking" response and follows up for the user alone.
        app.router.add_delete(f"{hook}/messages/@original", self._deleted)
        app.router.add_post(hook, self._edit)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}{api}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def expect(self, token: str) -> asyncio.Future[str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiters[token] = future
        return future

    async def _application(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "id": APPLICATION, "name": "bench", "icon": None, "description": "",
                "bot_public": True, "bot_require_code_grant": False, "verify_key": "00" * 32,
                "flags": 0, "owner": USER, "team": None, "approximate_guild_count": 1,
                "approximate_user_install_count": 0,
            }
        )  # fmt: skip

    async def _get_commands(self, request: web.Request) -> web.Response:
        return web.json_response(self.commands)

    async def _put_commands(self, request: web.Request) -> web.Response:
        ids = itertools.count(1)
        self.commands = [
            {
                "id": str(next(ids)),
                "application_id": APPLICATION,
                "version": "1",
                "type": 1,
                "default_member_permissions": None,
                "nsfw": False,
                **c,
            }
            for c in await request.json()
        ]
        return web.json_response(self.commands)

    async def _deleted(self, request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def _edit(self, request: web.Request) -> web.Response:
        body = await request.json()
        content = body.get("content") or ""
        waiter = self.waiters.pop(request.match_info["token"], None)
        if waiter is not None and not waiter.done():
            waiter.set_result(content)
        return web.json_response(
            {
                "id": "1", "channel_id": "555", "author": USER, "content": content,
                "timestamp": "2024-01-01T00:00:00+00:00", "edited_timestamp": None,
                "tts": False, "mention_everyone": False, "mentions": [], "mention_roles": [],
                "attachments": [], "embeds": [], "pinned": False, "type": 0, "flags": 0,
            }
        )  # fmt: skip


# -- the servers ---------------------------------------------------------------------------


def hikari_app(api: str, public_key: str) -> web.Application:
    import hikari

    bot = hikari.RESTBot(
        TOKEN, "Bot", public_key=public_key, banner=None, logs=None,
        suppress_optimization_warning=True, rest_url=api,
    )  # fmt: skip

    async def echo(interaction: hikari.CommandInteraction) -> AsyncIterator[Any]:
        yield interaction.build_deferred_response()
        text = str(interaction.options[0].value) if interaction.options else ""
        await interaction.edit_initial_response(text)

    bot.interaction_server.set_listener(hikari.CommandInteraction, echo)  # type: ignore[arg-type]
    app = web.Application()
    app.router.add_post("/discord/interactions", bot.interaction_server.aiohttp_hook)  # type: ignore[attr-defined]

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        rest = bot.rest
        assert isinstance(rest, hikari.impl.RESTClientImpl)
        rest.start()
        yield
        await rest.close()

    app.cleanup_ctx.append(lifecycle)
    return app


async def serve(kind: str, api: str, public_key: str) -> None:
    if kind == "hikari":
        await serve_app(hikari_app(api, public_key))
        return
    from pydantic import SecretStr  # in the slashgate server's process alone, as servers.py

    settings: dict[str, Any] = {
        "port": 0,
        "log_level": "WARNING",
        "store": os.environ.get("BENCH_STORE", "memory"),
        "discord_token": SecretStr(TOKEN),
        "discord_public_key": public_key,
        "discord_api_base": api,
    }
    await serve_slashgate(settings)


async def start(kind: str, api: str, public_key: str) -> Server:
    """The slashgate or hikari server of this bench in a process of its own."""
    script = [str(Path(__file__)), "serve", kind, api, public_key]
    return await Server.spawn(kind, script, dict(os.environ))


# -- the load ------------------------------------------------------------------------------

_ids = itertools.count(1_000_000)


def interaction(worker: int) -> dict[str, Any]:
    number = next(_ids)
    channel = str(500 + worker)
    return {
        "id": str(number), "application_id": APPLICATION, "type": 2, "token": f"t{number}",
        "version": 1, "channel_id": channel, "channel": {"id": channel, "type": 0},
        "user": USER, "locale": "en-US", "app_permissions": "0", "entitlements": [],
        "authorizing_integration_owners": {}, "context": 1, "attachment_size_limit": 10_485_760,
        "data": {"id": "1", "name": "echo", "type": 1,
                 "options": [{"name": "arguments", "type": 3, "value": "hello"}]},
    }  # fmt: skip


def signed(key: SigningKey, payload: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """An interaction's body and the headers Discord signs it with."""
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()))
    headers = {
        "X-Signature-Ed25519": key.sign(stamp.encode() + body).signature.hex(),
        "X-Signature-Timestamp": stamp,
        "Content-Type": "application/json",
    }
    return body, headers


async def command(
    session: aiohttp.ClientSession, key: SigningKey, server: Server, fake: FakeDiscord, worker: int
) -> float:
    """One signed command through to its reply; the acknowledgement's latency (seconds)."""
    payload = interaction(worker)
    body, headers = signed(key, payload)
    reply = fake.expect(payload["token"])
    start = time.perf_counter()
    async with session.post(f"{server.url}/discord/interactions", data=body, headers=headers) as r:
        answer = await r.json()
        acked = time.perf_counter() - start
        if r.status != 200 or answer.get("type") != 5:
            raise RuntimeError(f"{server.kind} answered {r.status}: {answer}")
    if await asyncio.wait_for(reply, REPLY_WAIT) != "hello":
        raise RuntimeError(f"{server.kind} replied something else")
    return acked


async def load(
    key: SigningKey, server: Server, fake: FakeDiscord, count: int, workers: int
) -> tuple[float, float]:
    """(CPU seconds of the server, wall seconds) for ``count`` commands from ``workers``."""
    commands = iter(range(count))

    async def user(session: aiohttp.ClientSession, worker: int) -> None:
        for _ in commands:
            await command(session, key, server, fake, worker)

    async with aiohttp.ClientSession() as session:
        cpu, wall = cpu_seconds(server.process.pid), time.perf_counter()
        await asyncio.gather(*(user(session, w) for w in range(workers)))
        return cpu_seconds(server.process.pid) - cpu, time.perf_counter() - wall


async def acks(key: SigningKey, server: Server, fake: FakeDiscord, count: int) -> list[float]:
    async with aiohttp.ClientSession() as session:
        return [await command(session, key, server, fake, 0) for _ in range(count)]


async def bench(args: argparse.Namespace) -> None:
    key = SigningKey.generate()
    public_key = key.verify_key.encode().hex()
    fake = FakeDiscord()
    await fake.start()
    servers = [
        await start("slashgate", fake.url, public_key),
        await start("hikari", fake.url, public_key),
    ]
    cpu: dict[str, list[float]] = {s.kind: [] for s in servers}
    rate: dict[str, list[float]] = {s.kind: [] for s in servers}
    latency: dict[str, list[float]] = {s.kind: [] for s in servers}
    try:
        for server in servers:
            await load(key, server, fake, args.warmup, args.workers)
        for _ in range(args.rounds):
            for server in servers:
                used, wall = await load(key, server, fake, args.commands, args.workers)
                cpu[server.kind].append(used / args.commands * 1000)
                rate[server.kind].append(args.commands / wall)
                latency[server.kind] += await acks(key, server, fake, args.acks)
    finally:
        for server in servers:
            await server.stop()
        await fake.stop()
    print(f"Discord /echo hello, {args.rounds} rounds of {args.commands} commands, "
          f"{args.workers} users; acks one at a time, {args.acks} a round")  # fmt: skip
    print(f"{'':12} {'ack p50 ms':>11} {'ack p95 ms':>11} {'CPU ms/cmd':>11} {'cmd/s':>8}")
    for kind in cpu:
        ms = sorted(v * 1000 for v in latency[kind])
        p95 = ms[int(len(ms) * 0.95) - 1]
        print(
            f"{kind:12} {statistics.median(ms):11.2f} {p95:11.2f} "
            f"{statistics.median(cpu[kind]):11.2f} {statistics.median(rate[kind]):8.0f}"
        )
    ratio = statistics.median(cpu["slashgate"]) / statistics.median(cpu["hikari"])
    print(f"CPU per command, slashgate / hikari: {ratio:.2f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        asyncio.run(serve(*sys.argv[2:5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--commands", type=int, default=300, help="timed commands a round")
    parser.add_argument("--workers", type=int, default=8, help="users at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--acks", type=int, default=50, help="one-at-a-time acks a round")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
