"""What the adversarial tests of every channel share: the hostile texts, a /healthz watch that
runs while an input is processed, and raw requests for header bytes no client library sends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

HEALTH_LIMIT = 0.1  # seconds: /healthz answers within this while any input is processed
BOUND = 30.0  # seconds: an input that takes longer hangs; the test fails instead of blocking

# Texts that are valid Unicode but hard on whatever measures, cuts or renders text. None of
# them holds Markdown syntax, so a reply that repeats them shows them as they are.
FLAVORS = {
    "ascii": "lorem ipsum dolor sit amet ",
    "emoji": "😀🚀🎉👍🏽 ",  # astral: two UTF-16 units each, one with a skin-tone modifier
    "zwj": "👩\u200d👩\u200d👧\u200d👦👨🏿\u200d🚒 ",  # ZWJ sequences: one glyph, many code points
    "rtl": "שלום עולם مرحبا بالعالم \u202eabc\u202c ",  # Hebrew, Arabic, an RTL override
    "combining": "e\u0301a\u0308\u0338Z\u0336\u0351\u0352\u0353 ",  # stacked combining marks
    "control": "nul\x00bell\x07esc\x1b[31mdel\x7f\u2028\u2029\ufeff ",  # NUL, C0, C1, separators
}


def fill(flavor: str, length: int) -> str:
    """``FLAVORS[flavor]`` repeated to exactly ``length`` code points."""
    pattern = FLAVORS[flavor]
    return (pattern * (length // len(pattern) + 1))[:length]


def fill_bytes(flavor: str, size: int) -> str:
    """``FLAVORS[flavor]`` repeated to at most ``size`` bytes of UTF-8."""
    pattern = FLAVORS[flavor]
    text = pattern * (size // len(pattern.encode()))
    rest = pattern.encode()[: size - len(text.encode())]
    return text + rest.decode(errors="ignore")


class Health:
    """Latencies of the /healthz answers seen while it watched.

    A latency is the smaller of the answer's wall time and the CPU time this process spent
    meanwhile: a loop blocked by the input spends both, while a process the shared machine
    did not schedule (CI's parallel workers) spends wall time only, and the offload threads
    working on the input beside a free loop spend CPU time only.
    """

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.walls: list[float] = []
        self.failures: list[str] = []

    def check(self) -> None:
        assert self.latencies, "/healthz was never answered"
        assert not self.failures, self.failures[:3]
        worst = max(self.latencies)
        wall = self.walls[self.latencies.index(worst)]
        assert worst <= HEALTH_LIMIT, (
            f"/healthz took {worst * 1000:.0f} ms of this process's time ({wall * 1000:.0f} ms)"
        )


@asynccontextmanager
async def healthz_watch(url: str) -> AsyncIterator[Health]:
    """Ask ``url``/healthz every 10 ms on its own connection while the body runs; on exit,
    every answer must have been a 200 within HEALTH_LIMIT.
    """
    health = Health()

    async def watch(http: aiohttp.ClientSession) -> None:
        while True:
            start, cpu = time.perf_counter(), time.process_time()
            try:
                async with http.get(f"{url}/healthz") as resp:
                    await resp.read()
                    if resp.status != 200:
                        health.failures.append(f"status {resp.status}")
            except aiohttp.ClientError as exc:
                health.failures.append(repr(exc))
            wall = time.perf_counter() - start
            health.walls.append(wall)
            health.latencies.append(min(wall, time.process_time() - cpu))
            await asyncio.sleep(0.01)  # a sampling interval: nothing is waited for

    async with aiohttp.ClientSession() as http:
        async with http.get(f"{url}/healthz"):  # connected before the watch starts
            pass
        watcher = asyncio.create_task(watch(http))
        try:
            yield health
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
    health.check()


async def raw_request(url: str, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.1 request as bytes (``head``: the request line and headers, without the
    blank line; Host, Content-Length and Connection are added): (status, body).
    """
    host, port = url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        extra = f"\r\nHost: {host}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        writer.write(head + extra.encode() + body)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), BOUND)
    finally:
        writer.close()
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]
