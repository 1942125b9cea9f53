"""Gateway replicas on one Redis, for each count asked: Telegram webhook updates (``/echo``,
each in its own chat) through to sendMessage on fake Bot APIs.

Every part is a process of its own (bench/loadrig.py): redis-server, the fake Bot APIs
(replica i sends to fake i mod fakes), the load generators (each takes a share of the
updates, spread round-robin over the replicas, ``--connections`` per replica in all) and the
replicas. Throughput is counted from the load's start to the last reply a fake received;
CPU per update of each kind of process is its utime + stime (from /proc) over that time,
summed, so that a helper near a whole core (its ``busy`` share) shows where the limit is.
``--pin`` puts each process on a core of its own (os.sched_setaffinity; round-robin once the
cores run out), in this order: redis-server, fakes, load generators, replicas.

``python bench/replicas.py --replicas 1,2,4,8 --updates 3000 [--pin]``; the redis-server
binary: ``--redis-server PATH``, else ``SLASHGATE_REDIS_SERVER``, else PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import os
import shutil
import signal
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.loadrig import (  # noqa: E402
    SECRET,
    TOKEN,
    Fakes,
    Load,
    Proc,
    cpu_of,
    gateway,
    open_access,
    pin,
    redis_binary,
    redis_server,
    redis_url,
    unpaced,
    url_of,
)


@dataclass
class Row:
    replicas: int
    rate: float  # updates per second
    server: float  # CPU us per update: the replicas together
    client: float  # the load generators
    fake: float  # the fake Bot APIs
    redis: float  # redis-server
    busiest: float  # of the fakes and load generators, the busiest one's share of a core
    load_done: float  # when the load generators were done, as a share of the run
    busy: float  # 503s of a full intake (the update sent again), per update


@dataclass
class Options:
    updates: int
    warmup: int | None
    clients: int | None
    fakes: int | None
    connections: int
    pin: bool
    redis: str
    tree: Path
    profile: Path | None


async def measure(replicas: int, options: Options, folder: Path) -> Row:
    cores: itertools.cycle[int | None] = (
        itertools.cycle(sorted(os.sched_getaffinity(0))) if options.pin else itertools.repeat(None)
    )  # type: ignore[assignment]
    clients = options.clients or math.ceil(replicas / 4)
    warmup = options.warmup or 200 * replicas
    redis = redis_server(options.redis, folder)
    fakes = Fakes(options.fakes or math.ceil(replicas / 2))
    gateways: list[Proc] = []
    spies: list[asyncio.subprocess.Process] = []
    try:
        await redis.start()
        pin(redis.pid, next(cores))
        await fakes.start()
        for proc in fakes.procs:
            pin(proc.pid, next(cores))
        client_cores = [next(cores) for _ in range(clients)]
        env = {
            "telegram_token": TOKEN, "telegram_secret": SECRET, "store": "redis",
            "redis_url": redis_url(redis), "inventory_wait": "0", "log_level": "WARNING",
            **unpaced(options.tree), **open_access(options.tree),
        }  # fmt: skip
        fake_of = [fakes.urls[i % len(fakes.urls)] for i in range(replicas)]
        gateways = [
            gateway({**env, "replica_id": f"r{i}", "telegram_api_base": fake}, options.tree)
            for i, fake in enumerate(fake_of)
        ]
        await asyncio.gather(*(g.start() for g in gateways))
        for proc in gateways:
            pin(proc.pid, next(cores))
        urls = [url_of(g) for g in gateways]
        lanes = max(1, options.connections // clients)

        warming = Load(urls, 1, warmup, clients, lanes)
        await warming.start([])
        warming.go()
        await warming.wait()
        await fakes.replies(warmup)

        measured = Load(urls, 10_000_000, options.updates, clients, lanes)
        await measured.start(client_cores)
        spies = await _profile(options.profile, gateways, replicas)
        helpers = [p.pid for p in fakes.procs]
        before = [cpu_of(g.pid) for g in gateways], cpu_of(redis.pid), [cpu_of(p) for p in helpers]
        started = measured.go()
        waiting = asyncio.ensure_future(measured.wait())
        done = await fakes.replies(warmup + options.updates)
        client_cpu = await waiting
        load_done = max(measured.ends)
        elapsed = done - started
        server = sum(cpu_of(g.pid) for g in gateways) - sum(before[0])
        redis_cpu = cpu_of(redis.pid) - before[1]
        fake_cpus = [cpu_of(p) - b for p, b in zip(helpers, before[2], strict=True)]
    except BaseException:
        for proc in gateways:  # why a replica refused: its own warnings
            print("".join(proc.output[-5:]), file=sys.stderr)
        raise
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its profile on SIGINT
            await spy.wait()
        await asyncio.gather(*(g.stop() for g in gateways))
        await fakes.stop()
        await redis.stop(kill=True)
    per = 1e6 / options.updates
    busiest = max([*fake_cpus, *measured.cpus]) / elapsed
    return Row(
        replicas, options.updates / elapsed, server * per, client_cpu * per,
        sum(fake_cpus) * per, redis_cpu * per, busiest, (load_done - started) / elapsed,
        measured.busy / options.updates,
    )  # fmt: skip


async def _profile(
    folder: Path | None, gateways: list[Proc], replicas: int
) -> list[asyncio.subprocess.Process]:
    """py-spy on each replica over the measured run (collapsed stacks, idle left out)."""
    if folder is None:
        return []
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    procs = []
    for n, proc in enumerate(gateways):
        out = folder / f"replicas{replicas}-r{n}.txt"
        argv = [spy, "record", "--pid", str(proc.pid), "--rate", "250", "--format", "raw",
                "--output", str(out), "--nonblocking"]  # fmt: skip
        procs.append(
            await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
            )
        )
    await asyncio.sleep(1.0)  # py-spy attaches
    return procs


def report(rows: dict[int, list[Row]], options: Options, rounds: int) -> None:
    medians = {
        count: Row(count, *(statistics.median(getattr(r, f) for r in runs) for f in _FIGURES))
        for count, runs in rows.items()
    }
    base = medians[min(medians)].rate
    print(
        f"replicas on Redis, Telegram /echo ({options.updates} updates after "
        f"{options.warmup or '200 a replica'}, "
        f"{options.connections} connections a replica, {rounds} round(s): medians; "
        f"{os.cpu_count()} cores{', pinned' if options.pin else ''})"
    )
    print(
        f"{'replicas':<9}{'updates/s':>10}{'x of ' + str(min(medians)):>8}"
        f"{'server us':>11}{'client us':>11}{'fake us':>9}{'redis us':>10}{'busiest':>9}"
        f"{'load done':>11}{'503s':>7}"
    )
    for count, row in medians.items():
        print(
            f"{count:<9}{row.rate:>10.0f}{row.rate / base:>8.2f}{row.server:>11.0f}"
            f"{row.client:>11.0f}{row.fake:>9.0f}{row.redis:>10.0f}{row.busiest:>9.0%}"
            f"{row.load_done:>11.0%}{row.busy:>7.0%}"
        )
    print(
        "us: CPU per update (server: all replicas); busiest: the busiest fake or load "
        "generator's share of a core; load done: when the load generators had every 200, "
        "as a share of the run; 503s: a full intake's, per update (each sent again 50 ms later)"
    )


_FIGURES = ("rate", "server", "client", "fake", "redis", "busiest", "load_done", "busy")


async def main(counts: list[int], rounds: int, options: Options) -> None:
    rows: dict[int, list[Row]] = {count: [] for count in counts}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(rounds):
            for count in counts:
                rows[count].append(await measure(count, options, Path(folder)))
    report(rows, options, rounds)


def _counts() -> str:
    """1 and 2, then 4 and 8 where the machine has two cores for each replica (its load
    generators, fakes and Redis need the rest).
    """
    cores = os.cpu_count() or 1
    return ",".join(str(n) for n in (1, 2, 4, 8) if n <= 2 or 2 * n <= cores)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("updates_", nargs="?", type=int, metavar="updates")
    parser.add_argument("--replicas", default=_counts(), help="replica counts, e.g. 1,2,4,8")
    parser.add_argument("--updates", type=int, default=1000, help="per count, after warm-up")
    parser.add_argument("--warmup", type=int, help="updates before (default: 200 a replica)")
    parser.add_argument("--rounds", type=int, default=1, help="the counts in turn, N times")
    parser.add_argument("--clients", type=int, help="load generators (default: replicas/4)")
    parser.add_argument("--fakes", type=int, help="fake Bot APIs (default: replicas/2)")
    parser.add_argument("--connections", type=int, default=16, help="per replica, in all")
    parser.add_argument("--pin", action="store_true", help="each process on a core")
    parser.add_argument("--redis-server", help="the binary (else SLASHGATE_REDIS_SERVER)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the gateway's source tree")
    parser.add_argument("--profile", type=Path, help="py-spy profiles of the replicas here")
    args = parser.parse_args()
    binary = redis_binary(args.redis_server)
    if binary is None:
        sys.exit("no redis-server: give --redis-server PATH or SLASHGATE_REDIS_SERVER")
    opts = Options(
        args.updates_ or args.updates, args.warmup, args.clients, args.fakes, args.connections,
        args.pin, binary, args.tree.resolve(), args.profile,
    )  # fmt: skip
    replica_counts = [int(n) for n in args.replicas.split(",")]
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(replica_counts, args.rounds, opts))
