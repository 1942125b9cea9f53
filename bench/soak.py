"""A soak of the webhook on the default store: does the gateway stay flat under a steady load,
and where does its memory level off?

``python bench/soak.py [MINUTES]`` starts ``slashgate serve`` in a process of its own, on a
new SQLite state file, and a load client in another process (``CLIENTS`` users, each one
request after the other, over ``KEYS`` conversation keys, half the requests with an
``Idempotency-Key``, a mix of ``/echo``, plain text, ``/remember``, ``/help`` and ``/status``).
Every ``--every`` seconds it prints the server's RSS, the state file's size (with its WAL), the
claims and keys in it, and the requests so far; at the end, whether RSS and the file stayed
within 5% after the warm-up (``--warmup`` minutes, long enough for the bounds to fill up). The
default of one minute is a smoke run; a soak wants 10 or more.

``--fill`` fills every bound as fast as the server answers: each request is a conversation
never seen before (``max_sessions``: the oldest idle one is closed), with an
``Idempotency-Key`` never seen before (a claim: ``dedupe_size``), saying ``/remember`` (the
conversation's commands, a key: ``sqlite_state_size``). So the defaults are all full after
100,000 requests or so, and the RSS from there on is the plateau. ``--commands K``: each
conversation takes K requests, each remembering one more command (K = 50, the embedded
runtime's most, is the costliest kind of conversation). ``--quick``: ``--fill`` for
two minutes at bounds lowered to 2,000 (``make bench`` runs it; it exits 0 whatever it finds).

``--set NAME=VALUE`` passes a setting to the server (``SLASHGATE_NAME``), for example
``--set dedupe_size=20000`` for a shorter warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import secrets
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import cpu_seconds  # noqa: E402

CLIENTS = 8
KEYS = 200_000
FLAT = 0.05  # the most RSS and the state file may vary after the warm-up
MiB = 1024 * 1024

# (weight, text): what the load sends; ``{n}`` is a number drawn for each request.
MIX = (
    (4, "/echo soak {n}"),
    (3, "hello, this is message {n}"),
    (1, "/remember note{m} remembered text {n}"),
    (1, "/help"),
    (1, "/status"),
)


# The bounds --quick lowers, so that they fill within its two minutes.
QUICK = ("dedupe_size", "sqlite_state_size", "max_sessions", "idempotency_size")
QUICK_BOUND = 2000

# -- the load client (its own process) ----------------------------------------------------


def steady(keys: int, texts: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """A request of the steady mix: (body, headers)."""
    n = random.randrange(1 << 30)
    body = {
        "conversation": f"soak-{random.randrange(keys)}",
        "user": "soak",
        "text": random.choice(texts).format(n=n, m=n % 4),
    }
    return body, ({"Idempotency-Key": secrets.token_hex(8)} if n % 2 else {})


def filling(commands: int) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
    """Requests that add to every bound: each a new Idempotency-Key, and a new conversation
    with its key every ``commands`` requests, each of which remembers a command of its own.
    """
    while True:
        conversation = f"fill-{secrets.token_hex(8)}"
        for k in range(commands):
            n = secrets.token_hex(8)
            body = {"conversation": conversation, "user": "soak", "text": f"/remember note{k} {n}"}
            yield body, {"Idempotency-Key": n}


async def load(
    url: str, seconds: float, clients: int, keys: int, fill: bool, commands: int
) -> None:
    """Send requests until ``seconds`` are over; print ``progress REQUESTS ERRORS`` every
    second and at the end, and the first errors as they come.
    """
    texts = [text for weight, text in MIX for _ in range(weight)]
    counts = {"requests": 0, "errors": 0}
    deadline = time.monotonic() + seconds

    async def user(session: aiohttp.ClientSession) -> None:
        fills = filling(commands)
        while time.monotonic() < deadline:
            body, headers = next(fills) if fill else steady(keys, texts)
            try:
                async with session.post(
                    f"{url}/v1/messages", json=body, headers=headers
                ) as response:
                    await response.read()
                    ok = response.status == 200
            except aiohttp.ClientError as exc:
                ok, response = False, None
                print(f"error {exc!r}", flush=True)
            counts["requests"] += 1
            if not ok:
                counts["errors"] += 1
                if counts["errors"] <= 5 and response is not None:
                    print(f"error {response.status} for {body['text']!r}", flush=True)

    async def report() -> None:
        while True:
            await asyncio.sleep(1)
            print(f"progress {counts['requests']} {counts['errors']}", flush=True)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:
        reporter = asyncio.ensure_future(report())
        await asyncio.gather(*(user(session) for _ in range(clients)))
        reporter.cancel()
    print(f"progress {counts['requests']} {counts['errors']}", flush=True)


# -- the soak (the server and the client, each its own process) -------------------------


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss(pid: int) -> int:
    """The most RSS the process has had (``VmHWM``)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def file_size(path: Path) -> int:
    """The state file with its WAL (the shared-memory index is not data)."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def bounded(path: Path) -> tuple[int, int]:
    """(claims, keys) in the state file, read-only beside the server (WAL: no lock taken)."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        claims = db.execute("SELECT count(*) FROM claims").fetchone()[0]
        keys = db.execute("SELECT count(*) FROM state").fetchone()[0]
    return claims, keys


@dataclass
class Sample:
    minute: float
    rss: int
    state: int
    requests: int
    errors: int
    cpu: float
    claims: int = 0
    keys: int = 0


@dataclass
class Progress:
    requests: int = 0
    errors: int = 0
    lines: list[str] = field(default_factory=list)


async def follow(stream: asyncio.StreamReader, progress: Progress) -> None:
    while line := (await stream.readline()).decode():
        if line.startswith("progress "):
            progress.requests, progress.errors = map(int, line.split()[1:])
        else:
            progress.lines.append(line)
            print(f"  client: {line.rstrip()}", flush=True)


async def start_server(state: Path, settings: list[str]) -> asyncio.subprocess.Process:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    env |= {"SLASHGATE_STATE_PATH": str(state), "SLASHGATE_LOG_LEVEL": "WARNING"}
    for setting in settings:
        name, _, value = setting.partition("=")
        env[f"SLASHGATE_{name.upper()}"] = value
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "slashgate", "serve", "--host", "127.0.0.1", "--port", "0",
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip


async def listening(server: asyncio.subprocess.Process) -> str:
    assert server.stdout is not None
    while line := (await asyncio.wait_for(server.stdout.readline(), 60)).decode():
        if line.startswith("slashgate listening on "):
            return line.split()[-1]
    raise RuntimeError("slashgate serve exited before it listened")


def spread(values: list[int]) -> float:
    return max(values) / min(values) - 1


async def soak(args: argparse.Namespace) -> bool:
    seconds = args.minutes * 60
    with tempfile.TemporaryDirectory(prefix="slashgate-soak-") as folder:
        state = Path(folder) / "state.sqlite3"
        server = await start_server(state, args.set)
        try:
            url = await listening(server)
            assert server.stdout is not None
            drain = asyncio.ensure_future(server.stdout.read())  # its log, read only on failure
            client = await asyncio.create_subprocess_exec(
                sys.executable, __file__, "--load", url, "--minutes", str(args.minutes),
                "--clients", str(args.clients), "--keys", str(args.keys),
                *(["--fill", "--commands", str(args.commands)] if args.fill else []),
                stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            assert client.stdout is not None
            progress = Progress()
            following = asyncio.ensure_future(follow(client.stdout, progress))
            samples = await sample(server.pid, state, progress, seconds, args.every)
            await client.wait()
            await following
            peak = peak_rss(server.pid)
        finally:
            server.terminate()
            await server.wait()
        if server.returncode not in (0, -15):
            print((await drain).decode(errors="replace")[-4000:])
    return report(samples, progress, args.warmup, peak)


async def sample(
    pid: int, state: Path, progress: Progress, seconds: float, every: float
) -> list[Sample]:
    samples: list[Sample] = []
    start = time.monotonic()
    print(
        f"{'minute':>6} {'RSS MiB':>8} {'state MB':>9} {'claims':>7} {'keys':>7} "
        f"{'requests':>9} {'req/s':>6} {'errors':>6} {'CPU %':>6}",
        flush=True,
    )
    while (len(samples) + 1) * every <= seconds + 1:
        await asyncio.sleep(max(0.0, (len(samples) + 1) * every - (time.monotonic() - start)))
        cpu = cpu_seconds(pid)
        now = Sample(
            (len(samples) + 1) * every / 60,  # as planned: the warm-up's end is exact
            rss(pid),
            file_size(state),
            progress.requests,
            progress.errors,
            cpu,
            *bounded(state),
        )
        before = samples[-1] if samples else Sample(0, 0, 0, 0, 0, 0.0)
        rate = (now.requests - before.requests) / ((now.minute - before.minute) * 60)
        busy = 100 * (now.cpu - before.cpu) / ((now.minute - before.minute) * 60)
        samples.append(now)
        print(
            f"{now.minute:6.1f} {now.rss / MiB:8.1f} {now.state / 1e6:9.1f} {now.claims:7d} "
            f"{now.keys:7d} {now.requests:9d} {rate:6.0f} {now.errors:6d} {busy:6.0f}",
            flush=True,
        )
    return samples


def report(samples: list[Sample], progress: Progress, warmup: float, peak: int) -> bool:
    after = [s for s in samples if s.minute > warmup]
    print(f"requests {progress.requests}, errors {progress.errors}, peak RSS {peak / MiB:.1f} MiB")
    if len(after) < 2:
        print(f"too short to judge: no two samples after the {warmup:.1f}-minute warm-up")
        return progress.errors == 0
    flat = True
    for name, values, unit, label in (
        ("RSS", [s.rss for s in after], MiB, "MiB"),
        ("state file", [s.state for s in after], 1e6, "MB"),
    ):
        change = spread(values)
        verdict = "flat" if change <= FLAT else "GROWS"
        flat = flat and change <= FLAT
        print(
            f"{name} after minute {warmup:.1f}: {min(values) / unit:.1f}-{max(values) / unit:.1f} "
            f"{label}, {100 * change:.1f}% apart: {verdict} (within {100 * FLAT:.0f}%)"
        )
    return flat and progress.errors == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("minutes", nargs="?", type=float, default=1.0)
    parser.add_argument("--minutes", dest="load_minutes", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=float, help="minutes not judged (default: a third)")
    parser.add_argument("--every", type=float, help="seconds between samples (default 60)")
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--keys", type=int, default=KEYS)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--fill", action="store_true", help="fill every bound (see above)")
    parser.add_argument(
        "--commands", type=int, default=1, help="--fill: commands each conversation remembers"
    )
    parser.add_argument("--quick", action="store_true", help="--fill, 2 minutes, bounds 2,000")
    parser.add_argument("--load", metavar="URL", help=argparse.SUPPRESS)  # the client
    args = parser.parse_args()
    if args.quick:
        args.fill, args.minutes = True, 2.0
        args.set = [*(f"{name}={QUICK_BOUND}" for name in QUICK), *args.set]
        args.every = args.every or 10.0
    if args.every is None:
        args.every = min(60.0, args.minutes * 60 / 6)
    if args.load:
        seconds = args.load_minutes * 60
        asyncio.run(load(args.load, seconds, args.clients, args.keys, args.fill, args.commands))
        return
    if args.warmup is None:
        args.warmup = args.minutes / 3
    flat = asyncio.run(soak(args))
    sys.exit(0 if flat or args.quick else 1)  # in make bench, no figure fails the run


if __name__ == "__main__":
    main()
