"""Test helpers: run ``slashgate serve`` as a subprocess, and read server-sent events."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
STARTUP = 30.0
# Where the agents of the tests work unless a test names a folder (the workspace setting):
# made when one starts, never in the checkout.
WORKSPACE = Path(tempfile.gettempdir()) / f"slashgate-tests-{os.getpid()}" / "workspace"


SERVE = (sys.executable, "-m", "slashgate", "serve")


@dataclass
class Served:
    url: str
    output: list[str]  # every line the server printed, stdout and stderr
    process: asyncio.subprocess.Process


@asynccontextmanager
async def serve_subprocess(
    *command: str, cwd: Path = ROOT, port: int = 0, **env: str
) -> AsyncIterator[Served]:
    """``slashgate serve --port 0`` (or ``command``; another ``port``) with ``SLASHGATE_*``
    settings from ``env``; stopped with SIGTERM on exit.
    """
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    # Nothing carried between runs: a test that wants durable state names its own store.
    clean["SLASHGATE_STORE"] = "memory"
    clean["SLASHGATE_WORKSPACE"] = str(WORKSPACE)
    clean.update({f"SLASHGATE_{k.upper()}": v for k, v in env.items()})
    proc = await asyncio.create_subprocess_exec(
        *(command or SERVE), "--port", str(port),
        cwd=cwd, env=clean,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    output: list[str] = []
    url = None
    try:
        while url is None:
            line = (await asyncio.wait_for(proc.stdout.readline(), STARTUP)).decode()
            if not line:
                raise RuntimeError("slashgate exited early:\n" + "".join(output))
            output.append(line)
            if "slashgate listening on " in line:  # the bare line, or a JSON one
                url = line.split("slashgate listening on ")[1].split('"')[0].strip()

        async def drain() -> None:
            assert proc.stdout is not None
            async for raw in proc.stdout:
                output.append(raw.decode())

        drainer = asyncio.create_task(drain())
        yield Served(url, output, proc)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await asyncio.wait_for(proc.wait(), STARTUP)
        if url is not None:
            await drainer


@asynccontextmanager
async def serve_app(app: web.Application) -> AsyncIterator[str]:
    """Serve ``app`` on an ephemeral 127.0.0.1 port; its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def read_events(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, Any]]:
    """(event, data) pairs of a text/event-stream response, as they arrive."""
    event, data = "message", []
    async for raw in response.content:
        line = raw.decode().rstrip("\n")
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])


async def burst(url: str, path: str, requests: list[tuple[dict[str, str], bytes]]) -> list[bytes]:
    """POST each (headers, body) to ``path`` on a connection of its own, the requests written
    in order with no pass of the loop between them (the connections opened first): a burst as
    one client sends it. The responses, whole, in the order they ended.
    """
    host, port = url.removeprefix("http://").split(":")
    opened = [await asyncio.open_connection(host, int(port)) for _ in requests]
    for (_, writer), (headers, body) in zip(opened, requests, strict=True):
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n{head}"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
    ended: list[bytes] = []

    async def read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ended.append(await reader.read())  # to the end: the server closes after the response
        writer.close()
        await writer.wait_closed()

    await asyncio.gather(*(read(reader, writer) for reader, writer in opened))
    return ended
