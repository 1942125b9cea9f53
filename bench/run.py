"""slashgate benchmarks. Every figure is printed beside a baseline measured in the same run,
because the machine is shared and noisy: compare the ratios, not the absolute numbers.

1. Contract cost per message: classify + composer_input payload for a 30-character message,
   on one core, beside ``json.dumps`` of the same message as a calibration baseline.
2. Webhook round-trip throughput: ``POST /v1/messages`` with ``/echo`` through the whole
   gateway (contract, session, embedded runtime), beside a bare aiohttp JSON handler; each
   server pinned to one core, the load generator on the other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contract import Command, SlashContract  # noqa: E402

MESSAGES = {
    "plain": "hello there, how is the build?",
    "slash": "/deploy staging now, then wait",
    "mixed": "/pr-review 12 in /worktree ok!",
}


def per_call_us(fn: Callable[[], object], batch: int = 2000, rounds: int = 31) -> float:
    """Median over ``rounds`` batches of the per-call time, in microseconds."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - start) / batch * 1e6)
    return statistics.median(samples)


def bench_contract() -> None:
    os.sched_setaffinity(0, {0})
    contract = SlashContract(
        commands=[
            Command(name="deploy", hint="environment"),
            Command(name="pr-review"),
            Command(name="worktree"),
            Command(name="memory show"),
        ],
        interactive_only={"settings"},
        host_commands=[
            Command(name=n, source="gateway") for n in ("help", "new", "cancel", "status")
        ],
    )
    print("contract cost per message (one core, median of 31 batches)")
    for label, text in MESSAGES.items():
        assert len(text) == 30, label
        base = per_call_us(lambda text=text: json.dumps({"text": text}))
        decide = per_call_us(lambda text=text: contract.classify(text))
        full = per_call_us(lambda text=text: contract.classify(text).payload)
        print(
            f"  {label:6} classify {decide:5.2f} us, + payload {full:5.2f} us"
            f"   (json.dumps baseline {base:4.2f} us: {decide / base:4.1f}x, {full / base:4.1f}x)"
        )


async def start_server(kind: str) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "servers.py"), kind, "0",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    line = await proc.stdout.readline()
    return proc, line.decode().split()[-1]


async def load(url: str, seconds: float, workers: int) -> float:
    """Requests per second over ``seconds`` with ``workers`` sequential clients."""
    done = 0
    deadline = time.perf_counter() + seconds

    async def worker(client: aiohttp.ClientSession, n: int) -> None:
        nonlocal done
        body = {"conversation": f"bench-{n}", "user": "bench", "text": "/echo hello"}
        while time.perf_counter() < deadline:
            async with client.post(f"{url}/v1/messages", json=body) as resp:
                await resp.read()
                assert resp.status == 200
            done += 1

    connector = aiohttp.TCPConnector(limit=workers)
    async with aiohttp.ClientSession(connector=connector) as client:
        start = time.perf_counter()
        await asyncio.gather(*(worker(client, n) for n in range(workers)))
        return done / (time.perf_counter() - start)


async def bench_webhook(seconds: float, rounds: int, workers: int) -> None:
    os.sched_setaffinity(0, {1})
    print(
        f"webhook round trip (/echo, {workers} clients, {rounds} alternating rounds of {seconds}s)"
    )
    servers = {kind: await start_server(kind) for kind in ("bare", "gateway")}
    try:
        for _, url in servers.values():
            await load(url, 0.5, workers)  # warm up
        rates: dict[str, list[float]] = {"bare": [], "gateway": []}
        for _ in range(rounds):
            for kind, (_, url) in servers.items():
                rates[kind].append(await load(url, seconds, workers))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            await proc.wait()
    bare, gateway = (statistics.median(rates[k]) for k in ("bare", "gateway"))
    print(f"  bare aiohttp JSON handler {bare:8.0f} req/s")
    print(f"  slashgate webhook         {gateway:8.0f} req/s   {gateway / bare:.0%} of bare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    bench_contract()
    asyncio.run(bench_webhook(args.seconds, args.rounds, args.workers))


if __name__ == "__main__":
    main()
