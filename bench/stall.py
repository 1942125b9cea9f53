"""The longest stall of the gateway's event loop while one big message is handled (issue 10).

``python bench/stall.py`` starts slashgate on the embedded runtime (SQLite store, in a
temporary directory) in a
process of its own, with a probe task on its loop that sleeps 1 ms again and again and notes
how late it wakes: the longest lateness while a message is handled is the longest stretch
the loop ran something else, the message's worst stall. A poller, in a third process, asks
``GET /healthz`` again as soon as each answer arrives: the slowest health check is what a
client waits at worst (it can queue behind more than one stretch). Meanwhile this process
sends big messages, one at a time, through ``POST /v1/messages`` (``/echo`` and the pasted
report of bench/micro.py), each after a quiet pause. The idle row is the same figures with
no message in flight: the machine's own noise.

The 1 MiB body goes four ways: a JSON answer; server-sent events (``Accept:
text/event-stream``: the ``accepted`` and ``reply`` events); with an ``Idempotency-Key`` (the
input journaled, the answer stored for a replay); and again with that key (the stored answer
replayed).

Sizes: the largest body the webhook takes (1 MiB of JSON), the longest text Slack sends
(a message of 40,000 characters) and the longest Telegram sends (4,096 characters). The
contract and the core do the same for every channel; only the intake differs. Not a test:
no figure fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import micro  # noqa: E402

LIMIT = 1024 * 1024  # the webhook's default body limit (webhook_max_body)
JSON = {"Content-Type": "application/json"}
SSE = {**JSON, "Accept": "text/event-stream"}
KEY = "Idempotency-Key"
# name: (text size, request headers); a KEY header gets the round's number appended.
SIZES = {
    "webhook 1 MiB body": (LIMIT, JSON),
    "webhook 1 MiB body, SSE": (LIMIT, SSE),
    "webhook 1 MiB, Idempotency-Key": (LIMIT, {**JSON, KEY: "stall-"}),
    "webhook 1 MiB, same key again": (LIMIT, {**JSON, KEY: "stall-"}),
    "Slack 40,000 chars": (40_000, JSON),
    "Telegram 4,096 chars": (4_096, JSON),
}
POLL, SERVE = "poll", "serve"  # argv[1] of the poller and of the server process
PROBE_SLEEP = 0.001


def body(size: int) -> bytes:
    """A ``POST /v1/messages`` body whose text is the long message of bench/micro.py, cut to
    ``size`` characters, or to what fits a body of ``LIMIT`` bytes when ``size`` is LIMIT.
    """
    text = micro.long_message(LIMIT)[:size]
    while True:
        data = json.dumps(
            {"conversation": "stall", "user": "bench", "text": text}, ensure_ascii=False
        ).encode()
        if len(data) <= LIMIT:
            return data
        text = text[: len(text) - (len(data) - LIMIT) - 1]


async def until_stdin_closes() -> None:
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    await stdin.read()


async def poll(url: str) -> None:
    """The poller process, until its standard input closes: (start, latency) of every
    health check, as JSON on stdout.
    """
    closed = asyncio.ensure_future(until_stdin_closes())
    samples: list[tuple[float, float]] = []
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{url}/healthz") as response:
            await response.read()
        print("ready", flush=True)
        while not closed.done():
            start = time.monotonic()
            async with session.get(f"{url}/healthz") as response:
                await response.read()
            samples.append((start, time.monotonic() - start))
    print(json.dumps(samples))


async def serve() -> None:
    """The server process: slashgate and the probe, until its standard input closes; then
    (start, lateness) of every probe sleep, as JSON on stdout.
    """
    from slashgate.config import Settings
    from slashgate.server import running

    samples: list[tuple[float, float]] = []

    async def probe() -> None:
        while True:
            start = time.monotonic()
            await asyncio.sleep(PROBE_SLEEP)
            samples.append((start, time.monotonic() - start - PROBE_SLEEP))

    with tempfile.TemporaryDirectory() as state:
        path = Path(state) / "state.sqlite3"
        settings = Settings(  # type: ignore[call-arg]
            port=0, log_level="WARNING", store="sqlite", state_path=path
        )
        async with running(settings) as server:
            print(f"listening on {server.url}", flush=True)
            task = asyncio.ensure_future(probe())
            await until_stdin_closes()
            task.cancel()
    print(json.dumps(samples), flush=True)


async def child(mode: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, __file__, mode, *args,
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def samples_of(process: asyncio.subprocess.Process) -> list[tuple[float, float]]:
    out, _ = await process.communicate(b"")  # closes its standard input: it stops
    return [tuple(sample) for sample in json.loads(out.splitlines()[-1])]  # type: ignore[misc]


Result = dict[str, tuple[int, list[float], list[float]]]  # chars, stalls, health checks (ms)


async def measure(rounds: int, pause: float) -> Result:
    server = await child(SERVE)
    assert server.stdout is not None
    url = (await asyncio.wait_for(server.stdout.readline(), 60)).decode().split()[-1]
    poller = await child(POLL, url)
    assert poller.stdout is not None
    await asyncio.wait_for(poller.stdout.readline(), 60)  # its first health check
    spans: dict[str, list[tuple[float, float]]] = {name: [] for name in SIZES}
    bodies = {name: body(size) for name, (size, _) in SIZES.items()}
    async with aiohttp.ClientSession() as session:
        await asyncio.sleep(pause)
        for round_ in range(rounds):
            for name, data in bodies.items():
                headers = dict(SIZES[name][1])
                if KEY in headers:
                    headers[KEY] += str(round_)
                start = time.monotonic()
                async with session.post(f"{url}/v1/messages", data=data, headers=headers) as r:
                    answer = await r.read()
                    if r.status != 200:
                        raise RuntimeError(f"{name}: {r.status} {answer[:200]!r}")
                spans[name].append((start, time.monotonic()))
                await asyncio.sleep(pause)
    checks = await samples_of(poller)
    probes = await samples_of(server)
    busy = [span for name in SIZES for span in spans[name]]
    result: Result = {
        name: (
            len(json.loads(bodies[name])["text"]),
            [_worst(probes, span) for span in spans[name]],
            [_worst(checks, span) for span in spans[name]],
        )
        for name in SIZES
    }
    quiet = (busy[0][0] - pause, busy[0][0])  # before the first message
    result["idle (no message in flight)"] = (0, [_worst(probes, quiet)], [_worst(checks, quiet)])
    return result


def _worst(samples: list[tuple[float, float]], span: tuple[float, float]) -> float:
    """The longest sample (ms) that overlaps ``span``."""
    return 1000 * max((d for start, d in samples if _overlaps(start, d, span)), default=0.0)


def _overlaps(start: float, latency: float, span: tuple[float, float]) -> bool:
    return start < span[1] and start + latency > span[0]


async def run(rounds: int, pause: float) -> None:
    result = await measure(rounds, pause)
    print(f"slashgate on the embedded runtime, {rounds} messages of each size; medians (max)")
    print(f"{'input':30} {'text':>16}  {'loop stall (ms)':>17}  {'/healthz (ms)':>17}  goal")
    for name, (chars, stalls, checks) in result.items():
        size = f"{chars:,} chars" if chars else "-"
        print(f"{name:30} {size:>16}  {_spread(stalls):>17}  {_spread(checks):>17}  stall <= 50")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({max(values):.1f})"


def main() -> None:
    if sys.argv[1:2] == [POLL]:
        asyncio.run(poll(sys.argv[2]))
        return
    if sys.argv[1:2] == [SERVE]:
        asyncio.run(serve())
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="messages of each size")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between messages")
    args = parser.parse_args()
    asyncio.run(run(args.rounds, args.pause))


if __name__ == "__main__":
    main()
