"""deploy/compose.replicas.yaml's processes, started the same way without Docker: its gateway
replicas with the settings it gives them and the webhook token .env gives them, on a real
Redis, behind a round-robin proxy (nginx with deploy/nginx.conf where nginx is installed, else
a small one in this test that adds X-Forwarded-For as nginx does); traffic through the proxy
is answered on every conversation, and every replica serves some.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.http import SERVE, STARTUP, read_events, serve_app, serve_subprocess
from tests.metrics import scrape
from tests.ops.compose import load_compose
from tests.redis_server import free_port, needs_redis, redis_server

pytestmark = needs_redis

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose.replicas.yaml"
NGINX = shutil.which("nginx")
CONVERSATIONS = 8
# Hop-by-hop and length headers: each side of a proxy sets its own.
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade"}
# What .env gives the replicas (env_file): through the proxy, /v1/* needs it (docs/deploy.md).
TOKEN = "replicas-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def replica_settings(compose: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The gateway services (the ones that run the slashgate image) and their settings."""
    return {
        name: {k: str(v) for k, v in service["environment"].items()}
        for name, service in compose["services"].items()
        if service.get("image") == "slashgate"
    }


@asynccontextmanager
async def round_robin(upstreams: list[str]) -> AsyncIterator[str]:
    """A proxy that passes each request to the next upstream, streaming the answer back."""
    turn = itertools.cycle(upstreams)

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        assert request.remote is not None
        headers["X-Forwarded-For"] = request.remote  # nginx.conf: $proxy_add_x_forwarded_for
        async with client.request(
            request.method,
            next(turn) + request.path_qs,
            headers=headers,
            data=await request.read(),
            auto_decompress=False,
        ) as upstream:
            answer = web.StreamResponse(
                status=upstream.status,
                headers={k: v for k, v in upstream.headers.items() if k.lower() not in HOP},
            )
            await answer.prepare(request)
            async for chunk in upstream.content.iter_any():
                await answer.write(chunk)
            await answer.write_eof()
            return answer

    app = web.Application()
    app.router.add_route("*", "/{path:.*}", forward)
    async with aiohttp.ClientSession() as client, serve_app(app) as url:
        yield url


@asynccontextmanager
async def nginx(upstreams: list[str], folder: Path) -> AsyncIterator[str]:
    """nginx with deploy/nginx.conf, its replicas' names and its port replaced by ours."""
    assert NGINX is not None
    config = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    servers = iter(upstreams)
    config = re.sub(r"server gateway-\w+:8080;", lambda _: f"server {next(servers)[7:]};", config)
    port = free_port()
    config = config.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    temporary = " ".join(  # nginx's own folders, in the test's instead of /var/lib/nginx
        f"{kind}_temp_path {folder / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (folder / "nginx.conf").write_text(
        f"daemon off; pid {folder}/nginx.pid; error_log stderr;\n"
        f"events {{}}\nhttp {{ access_log off; {temporary}\n{config}\n}}\n",
        encoding="utf-8",
    )
    process = await asyncio.create_subprocess_exec(
        NGINX, "-e", "stderr", "-p", str(folder), "-c", str(folder / "nginx.conf")
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            while True:  # nginx says nothing when it listens: ask until it answers
                try:
                    async with http.get(url + "/healthz") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    assert process.returncode is None, "nginx exited"
                    await asyncio.sleep(0.05)
        yield url
    finally:
        if process.returncode is None:
            process.terminate()
        await asyncio.wait_for(process.wait(), STARTUP)


async def post(http: aiohttp.ClientSession, url: str, conversation: str, text: str) -> Any:
    body = {"conversation": conversation, "user": "ada", "text": text}
    async with http.post(url + "/v1/messages", json=body, headers=AUTH) as response:
        assert response.status == 200, await response.text()
        return (await response.json())["reply"]


async def test_the_replicas_behind_the_proxy_answer_every_conversation(tmp_path: Path) -> None:
    compose = load_compose(COMPOSE, {})
    redis = compose["services"]["redis"]
    assert "--appendonly" in redis["command"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    published = compose["services"]["proxy"]["ports"]
    assert published == ["127.0.0.1:8080:8080"]  # this machine only, unless .env says so
    async with redis_server(tmp_path) as server:
        compose = load_compose(COMPOSE, {"SLASHGATE_REDIS_URL": server.url})
        replicas = replica_settings(compose)
        assert len(replicas) >= 2
        async with AsyncExitStack() as stack:
            served = [
                await stack.enter_async_context(
                    serve_subprocess(
                        *SERVE,
                        **{k.removeprefix("SLASHGATE_"): v for k, v in env.items()},
                        WEBHOOK_TOKEN=TOKEN,
                    )
                )
                for env in replicas.values()
            ]
            upstreams = [s.url for s in served]
            if NGINX:
                (tmp_path / "nginx").mkdir()
                proxy = await stack.enter_async_context(nginx(upstreams, tmp_path / "nginx"))
            else:
                proxy = await stack.enter_async_context(round_robin(upstreams))
            http = await stack.enter_async_context(aiohttp.ClientSession())
            body = {"conversation": "c0", "user": "ada", "text": "/echo no token"}
            async with http.post(proxy + "/v1/messages", json=body) as response:
                assert response.status == 401  # the token .env gives the replicas

            async def converse(n: int) -> None:
                conversation = f"c{n}"
                for text in (f"/echo hello {n}", f"/echo again {n}"):
                    reply = await post(http, proxy, conversation, text)
                    assert reply["text"] == text.removeprefix("/echo "), reply

            await asyncio.gather(*(converse(n) for n in range(CONVERSATIONS)))

            # Streamed through the proxy as it runs, not held back until the end: the first
            # line of a long turn arrives, and /cancel (on whichever replica) ends the turn.
            body = {"conversation": "stream", "user": "ada", "text": f"/slow {STARTUP:.0f}"}
            headers = {"Accept": "text/event-stream", **AUTH}
            async with http.post(proxy + "/v1/messages", json=body, headers=headers) as resp:
                events = read_events(resp)
                assert [(await anext(events))[0] for _ in range(2)] == ["accepted", "delta"]
                cancelled = await post(http, proxy, "stream", "/cancel")
                assert cancelled["text"] == "Cancelled the running turn.", cancelled
                last = [data async for _, data in events][-1]
            assert last["reply"]["stop_reason"] == "cancelled", last

            # Each replica scraped on its own port, as Prometheus does.
            served_by = [
                (await scrape(url)).total("slashgate_inputs_total", channel="webhook")
                for url in upstreams
            ]
            assert sum(served_by) == 2 * CONVERSATIONS + 2, served_by  # and /slow, /cancel
            assert all(count > 0 for count in served_by), served_by
            assert all(
                any(replica in line for line in s.output)
                for replica, s in zip(replicas, served, strict=True)
            ), "each replica named as the compose file names it"
