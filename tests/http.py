"""Test helpers: run ``slashgate serve`` as a subprocess, and read server-sent events."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
STARTUP = 30.0


@dataclass
class Served:
    url: str
    output: list[str]  # every line the server printed, stdout and stderr


@asynccontextmanager
async def serve_subprocess(**env: str) -> AsyncIterator[Served]:
    """``slashgate serve --port 0`` with ``SLASHGATE_*`` settings from ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    clean.update({f"SLASHGATE_{k.upper()}": v for k, v in env.items()})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway", "serve", "--port", "0",
        cwd=ROOT, env=clean,
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
            if line.startswith("slashgate listening on "):
                url = line.split()[-1]

        async def drain() -> None:
            assert proc.stdout is not None
            async for raw in proc.stdout:
                output.append(raw.decode())

        drainer = asyncio.create_task(drain())
        yield Served(url, output)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await asyncio.wait_for(proc.wait(), STARTUP)
        if url is not None:
            await drainer


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
