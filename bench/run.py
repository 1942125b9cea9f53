"""slashgate's hot path against its anchors, measured side by side in one run: ``make bench``.

The machine is shared and noisy, so every server figure is a ratio against an anchor measured
in the same run, rounds alternating between the two:

- server CPU per request: utime + stime of the server process (``/proc/<pid>/stat``) read
  before and after ``--requests`` requests that follow a warm-up, the load coming from this
  process over ``--workers`` connections (each a user who waits for the answer before writing
  again); throughput is this process's count over its wall time.
  webhook ``/echo hello`` vs a bare aiohttp JSON handler, and that handler doing the
  contract's work of the webhook alone (the floor under the webhook's figure); Telegram
  ``/echo m1`` through to sendMessage vs an aiogram echo bot; a Slack slash command through
  to its reply vs a slack-bolt app (``ack()`` then ``say()``), plus the ack latency of both,
  one at a time (the fake Slack in a process of its own, and in this one as earlier runs
  had it);
- the contract on one message (classify + payload of 30 characters, microseconds), its cost
  against the input size (classify + payload + validation up to 1 MiB, with the exponent of
  the fit ``time ~ size^k``), and memory per idle conversation (RSS, in a process of its own).

Servers are in bench/servers.py, fake platforms in bench/platforms.py, the single-process
figures in bench/micro.py. Nothing here is a test: no figure fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import micro  # noqa: E402
from bench.platforms import FakePlatform, FakeSlack, FakeTelegram  # noqa: E402
from bench.servers import SLACK_SECRET, TELEGRAM_SECRET  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
REPLY_WAIT = 30.0  # seconds: a reply that takes longer means the server is broken
CHATS_PER_USER = 4  # each simulated user writes in this many chats (channels) in turn
ACK_WARMUP = 20  # commands before the timed ones, for servers started for the ack figure
# The webhook's floor (bench/servers.py ``contract``): its answer without the core and runtime.
WEBHOOK_FLOOR = "  floor: the contract's work alone"
FLOOR_BODY = {"conversation": "floor", "text": "/agent echo hi"}  # the Slack ack's floor POST


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # fields 14 and 15 of proc(5)


@dataclass
class Server:
    kind: str
    process: asyncio.subprocess.Process
    url: str

    @classmethod
    async def start(cls, kind: str, api: str = "", store: str = "memory") -> Server:
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(ROOT / "bench" / "servers.py"), kind, api,
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, env={**os.environ, "BENCH_STORE": store},
        )  # fmt: skip
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        if not line.startswith(b"listening on "):
            raise RuntimeError(f"the {kind} server did not start")
        return cls(kind, process, line.decode().split()[-1])

    async def stop(self) -> None:
        self.process.terminate()
        await self.process.wait()


# One request of one simulated user: (session, worker number, sequence number).
Request = Callable[[aiohttp.ClientSession, int, int], Awaitable[None]]


async def drive(request: Request, count: int, workers: int) -> float:
    """Send ``count`` requests from ``workers`` users; the wall time in seconds."""
    sequence = iter(range(count))

    async def user(session: aiohttp.ClientSession, worker: int) -> None:
        for n in sequence:
            await request(session, worker, n)

    connector = aiohttp.TCPConnector(limit=workers)
    async with aiohttp.ClientSession(connector=connector) as session:
        start = time.perf_counter()
        await asyncio.gather(*(user(session, w) for w in range(workers)))
        return time.perf_counter() - start


async def checked(response: aiohttp.ClientResponse) -> bytes:
    body = await response.read()
    if response.status != 200:
        raise RuntimeError(f"{response.url} answered {response.status}: {body[:200]!r}")
    return body


# -- the three pairs ----------------------------------------------------------------------


def webhook_request(url: str) -> Request:
    async def request(session: aiohttp.ClientSession, worker: int, n: int) -> None:
        body = {"conversation": f"bench-{worker}", "user": "bench", "text": "/echo hello"}
        async with session.post(f"{url}/v1/messages", json=body) as response:
            await checked(response)

    return request


_update_ids = iter(range(1, 1 << 62))


def telegram_request(url: str, fake: FakePlatform) -> Request:
    headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
    sent: Counter[int] = Counter()  # messages per user

    async def request(session: aiohttp.ClientSession, worker: int, n: int) -> None:
        # Private chats of the user's own, in turn. A chat is held until the reply's send
        # returns: a slash command written the instant the reply lands at the fake (in the
        # same chat) can reach the server before that and find the chat busy.
        sent[worker] += 1
        chat = CHATS_PER_USER * worker + 1 + sent[worker] % CHATS_PER_USER
        update_id = next(_update_ids)
        update = {
            "update_id": update_id,
            "message": {
                "message_id": update_id,
                "date": 1700000000,
                "chat": {"id": chat, "type": "private", "first_name": "Ann"},
                "from": {"id": chat, "is_bot": False, "first_name": "Ann"},
                "text": "/echo m1",
                "entities": [{"type": "bot_command", "offset": 0, "length": 5}],
            },
        }
        reply = fake.expect(str(chat))
        async with session.post(f"{url}/telegram/webhook", json=update, headers=headers) as r:
            await checked(r)
        if (text := await asyncio.wait_for(reply, REPLY_WAIT)) != "m1":
            raise RuntimeError(f"Telegram: a wrong reply {text!r}")

    return request


_trigger_ids = iter(range(1, 1 << 62))
# Commands per (server, user): the ack timings make a request function per command.
_slack_sent: Counter[tuple[str, int]] = Counter()


def slack_signed(body: str) -> dict[str, str]:
    stamp = str(int(time.time()))
    base = f"v0:{stamp}:{body}".encode()
    digest = hmac.new(SLACK_SECRET.encode(), base, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": f"v0={digest}",
    }


def slack_command(channel: str, response_url: str) -> tuple[str, dict[str, str]]:
    """A signed slash command ``/agent echo hi`` from ``channel``: its form and headers."""
    body = urlencode(
        {
            "token": "legacy", "team_id": "T1", "team_domain": "bench",
            "channel_id": channel, "channel_name": "general", "user_id": "U1",
            "user_name": "ann", "command": "/agent", "text": "echo hi", "api_app_id": "A1",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": f"1.{next(_trigger_ids)}",  # unique: platforms dedupe on it
        }
    )  # fmt: skip
    return body, slack_signed(body)


def slack_request(url: str, fake: FakeSlack, acks: list[float] | None = None) -> Request:
    async def request(session: aiohttp.ClientSession, worker: int, n: int) -> None:
        # Channels of the user's own, in turn, as for Telegram: a channel is held until the
        # reply's send returns, and a command that comes the instant the reply lands at the
        # fake could find it busy.
        _slack_sent[url, worker] += 1
        channel = f"C{worker}-{_slack_sent[url, worker] % CHATS_PER_USER}"
        body, headers = slack_command(channel, fake.response_url_for(channel))
        reply = fake.expect(channel)
        start = time.perf_counter()
        async with session.post(f"{url}/slack/events", data=body, headers=headers) as r:
            await checked(r)
        if acks is not None:
            acks.append((time.perf_counter() - start) * 1000)
        text = await asyncio.wait_for(reply, REPLY_WAIT)
        if "hi" not in text:
            raise RuntimeError(f"Slack: a wrong reply {text!r}")

    return request


# -- measuring ----------------------------------------------------------------------------


@dataclass
class Pair:
    """slashgate on each store and its anchor (roles: the stores, then ``anchor``), with
    what each round measured.
    """

    name: str
    servers: dict[str, Server]
    requests: dict[str, Request]
    cpu_us: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rate: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def ratios(self, role: str) -> list[float]:
        """Per round; none for a role the pair has not (the floor has no store)."""
        if role not in self.servers:
            return []
        return [s / a for s, a in zip(self.cpu_us[role], self.cpu_us["anchor"], strict=True)]


async def measure(
    server: Server, request: Request, count: int, workers: int
) -> tuple[float, float]:
    """(server CPU microseconds per request, requests per second)."""
    pid = server.process.pid
    before = cpu_seconds(pid)
    wall = await drive(request, count, workers)
    used = cpu_seconds(pid) - before
    return used / count * 1e6, count / wall


async def run_pair(pair: Pair, args: argparse.Namespace) -> None:
    roles = list(pair.servers)
    for role in roles:
        await drive(pair.requests[role], args.warmup, args.workers)
    for round_ in range(args.rounds):
        # Each role goes first in turn: a change of the machine's speed reaches each alike.
        order = roles[round_ % len(roles) :] + roles[: round_ % len(roles)]
        for role in order:
            count = args.sqlite_requests if role == "sqlite" else args.requests
            cpu, rate = await measure(pair.servers[role], pair.requests[role], count, args.workers)
            pair.cpu_us[role].append(cpu)
            pair.rate[role].append(rate)


async def slack_acks(slack: dict[str, tuple[str, FakeSlack]], count: int) -> dict[str, list[float]]:
    """Ack latency one command at a time (each reply awaited before the next command), the
    fake Slack in this process (the figure of earlier runs).
    """
    acks: dict[str, list[float]] = {role: [] for role in slack}
    for _ in range(count):
        for role, (url, fake) in slack.items():
            await drive(slack_request(url, fake, acks[role]), 1, 1)
    return acks


async def slack_acks_apart(count: int, stores: list[str]) -> dict[str, list[float]]:
    """Ack latency one command at a time, the fake Slack in a process of its own.

    In this process the fake takes each reply on the loop that is reading the ack: the faster
    a server replies, the later its ack is read (a reply delayed 4 ms made the ack 0.5-1.8 ms
    quicker). Slack is another machine; here too, the fake is another process. Each reply is
    awaited before the next command; one kept-alive connection per server. The floor is a
    bare aiohttp server's answer to a small JSON POST, timed the same way: idle between its
    requests as the servers are between their commands (a process woken from its sleep
    answers later than one that just ran: 1.8 ms against 1.1 here), it is the client's and
    the machine's share of the figure.

    The client keeps a core of its own (the others serve the servers and the fake): right
    after its ack a server runs the command and the fake takes the reply, and on two shared
    cores that work kept the client from reading the ack (with the run delayed 6 ms, an
    experiment, the ack median fell from 2.2-3.0 ms to 1.5).
    """
    fake = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "bench" / "platforms.py"),
        cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert fake.stdout is not None
    api = (await asyncio.wait_for(fake.stdout.readline(), 60)).decode().strip()
    servers: dict[str, Server] = {}
    roles = [*stores, "anchor"]
    acks: dict[str, list[float]] = {role: [] for role in [*roles, "floor"]}
    own = os.sched_getaffinity(0)
    try:
        for store in stores:
            servers[store] = await Server.start("slack", f"{api}/api/", store)
        servers["anchor"] = await Server.start("bolt", f"{api}/api/")
        bare = servers["floor"] = await Server.start("bare")
        _cores_apart(own, [fake.pid, *(server.process.pid for server in servers.values())])
        async with aiohttp.ClientSession() as session:
            for n in range(ACK_WARMUP + count):
                for role in roles:
                    server = servers[role]
                    channel = f"C{role}-{n % CHATS_PER_USER}"
                    body, headers = slack_command(channel, f"{api}/response/{channel}")
                    start = time.perf_counter()
                    url = f"{server.url}/slack/events"
                    async with session.post(url, data=body, headers=headers) as r:
                        await checked(r)
                    if n >= ACK_WARMUP:
                        acks[role].append((time.perf_counter() - start) * 1000)
                    replies = f"{api}/replies/{channel}"
                    async with session.get(replies, timeout=aiohttp.ClientTimeout(REPLY_WAIT)) as r:
                        text = (await checked(r)).decode()
                    if "hi" not in text:
                        raise RuntimeError(f"Slack: a wrong reply {text!r}")
                start = time.perf_counter()
                async with session.post(f"{bare.url}/v1/messages", json=FLOOR_BODY) as r:
                    await checked(r)
                if n >= ACK_WARMUP:
                    acks["floor"].append((time.perf_counter() - start) * 1000)
    finally:
        os.sched_setaffinity(0, own)
        for server in servers.values():
            await server.stop()
        await fake.communicate(b"")  # closes its standard input: it stops
    return acks


def _cores_apart(cores: set[int], others: list[int]) -> None:
    """This process on the first of ``cores``, the processes ``others`` on the rest (with one
    core, all share it).
    """
    if len(cores) > 1:
        mine = min(cores)
        for pid in others:
            os.sched_setaffinity(pid, cores - {mine})
        os.sched_setaffinity(0, {mine})


async def servers_section(args: argparse.Namespace) -> tuple[list[Pair], dict[str, list[float]]]:
    stores: list[str] = args.stores
    roles = [*stores, "anchor"]
    # A fake of each platform per role: each answers the chats of one server only.
    fakes = {role: (FakeTelegram(), FakeSlack()) for role in roles}
    for tg, sl in fakes.values():
        await tg.start()
        await sl.start()
    started: list[Server] = []

    async def start(kind: str, api: str = "", store: str = "memory") -> Server:
        server = await Server.start(kind, api, store)
        started.append(server)
        return server

    async def each_store(
        kind: str, api: Callable[[str], str] = lambda role: ""
    ) -> dict[str, Server]:
        """``kind`` on each store, in a process of its own with a fresh state file."""
        servers = await asyncio.gather(*(start(kind, api(store), store) for store in stores))
        return dict(zip(stores, servers, strict=True))

    try:
        bare, floor = await start("bare"), await start("contract")
        webhook = await each_store("webhook")
        telegram = await each_store("telegram", lambda role: fakes[role][0].url)
        slack = await each_store("slack", lambda role: fakes[role][1].api)
        aiogram = await start("aiogram", fakes["anchor"][0].url)
        bolt = await start("bolt", fakes["anchor"][1].api)
        pairs = [
            Pair(
                "webhook /echo",
                webhook | {"anchor": bare},
                {role: webhook_request(server.url) for role, server in webhook.items()}
                | {"anchor": webhook_request(bare.url)},
            ),
            # The contract's work alone: no store, shown in the first store's column.
            Pair(
                WEBHOOK_FLOOR,
                {stores[0]: floor, "anchor": bare},
                {stores[0]: webhook_request(floor.url), "anchor": webhook_request(bare.url)},
            ),
            Pair(
                "Telegram /echo",
                telegram | {"anchor": aiogram},
                {
                    role: telegram_request(server.url, fakes[role][0])
                    for role, server in (telegram | {"anchor": aiogram}).items()
                },
            ),
            Pair(
                "Slack /agent echo",
                slack | {"anchor": bolt},
                {
                    role: slack_request(server.url, fakes[role][1])
                    for role, server in (slack | {"anchor": bolt}).items()
                },
            ),
        ]
        for pair in pairs:
            if pair.name in args.only or not args.only:
                await run_pair(pair, args)
        acks = await slack_acks(
            {
                role: (server.url, fakes[role][1])
                for role, server in (slack | {"anchor": bolt}).items()
            },
            args.acks,
        )
        if args.verbose:
            for role, (fake_tg, fake_sl) in fakes.items():
                print(
                    f"{role}: telegram {dict(fake_tg.calls)} over {len(fake_tg.peers)} connections"
                )
                print(f"{role}: slack {dict(fake_sl.calls)} over {len(fake_sl.peers)} connections")
        return pairs, acks
    finally:
        for server in started:
            await server.stop()
        for tg, sl in fakes.values():
            await tg.stop()
            await sl.stop()


# -- the table ----------------------------------------------------------------------------


def spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:{fmt}} ({low:{fmt}}-{high:{fmt}})"


def machine() -> str:
    model = "unknown CPU"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"nproc {os.cpu_count()}, {model}, load average {load}"


STORE_NAMES = {"memory": "memory", "sqlite": "SQLite"}
GOALS = {
    "webhook /echo": "<= 1.25x (no worse than 1.67x)",
    WEBHOOK_FLOOR: "-",
    "Telegram /echo": "<= 1.2x (no worse than 1.5x)",
    "Slack /agent echo": "<= 1.0x",
}
ANCHORS = {
    "webhook /echo": "bare aiohttp JSON",
    WEBHOOK_FLOOR: "bare aiohttp JSON",
    "Telegram /echo": "aiogram echo bot",
    "Slack /agent echo": "slack-bolt ack+say",
}


def servers_rows(
    pairs: list[Pair], ack_rows: dict[str, dict[str, list[float]]], stores: list[str]
) -> list[tuple[str, ...]]:
    """figure | slashgate on each store | anchor | ratio on each store | goal."""
    rows: list[tuple[str, ...]] = [
        (
            "figure",
            *(f"slashgate, {STORE_NAMES[store]}" for store in stores),
            "anchor",
            *(f"ratio, {STORE_NAMES[store]} (range)" for store in stores),
            "goal",
        )
    ]
    for pair in pairs:
        if not pair.cpu_us["anchor"]:
            continue
        rows.append(
            (
                f"{pair.name}: server CPU/request (us)",
                *(spread(pair.cpu_us[store], ".0f") for store in stores),
                f"{ANCHORS[pair.name]} {spread(pair.cpu_us['anchor'], '.0f')}",
                *(spread(pair.ratios(store), ".2f") for store in stores),
                GOALS[pair.name],
            )
        )
        if pair.name == WEBHOOK_FLOOR:
            continue  # a part of the webhook's figure: its throughput says nothing more
        anchor = statistics.median(pair.rate["anchor"])
        rows.append(
            (
                f"{pair.name}: throughput (req/s, client)",
                *(spread(pair.rate[store], ".0f") for store in stores),
                spread(pair.rate["anchor"], ".0f"),
                *(f"{statistics.median(pair.rate[store]) / anchor:.2f}" for store in stores),
                "-",
            )
        )
    goal = "median <= 2 ms"
    for label, acks in ack_rows.items():
        if not acks["anchor"]:
            continue
        p90 = {role: statistics.quantiles(v, n=10)[-1] for role, v in acks.items()}
        median = {role: statistics.median(v) for role, v in acks.items()}
        rows.append(
            (
                label,
                *(f"median {median[store]:.2f}, p90 {p90[store]:.2f}" for store in stores),
                f"median {median['anchor']:.2f}, p90 {p90['anchor']:.2f}",
                *(f"{median[store] / median['anchor']:.2f}" for store in stores),
                goal,
            )
        )
        goal = "-"  # the goal is the first row's
        if "floor" in acks:
            rows.append(
                (
                    "  floor: a bare aiohttp server, idle as the servers",
                    *("-" for _ in stores),
                    f"median {median['floor']:.2f}, p90 {p90['floor']:.2f}",
                    *(f"ack {median[store] / median['floor']:.2f}x it" for store in stores),
                    "-",
                )
            )
    return rows


def aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """The rows in columns, a rule under the first."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = (cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        lines.append(" | ".join(cells).rstrip())
        if i == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return lines


def table(
    pairs: list[Pair],
    ack_rows: dict[str, dict[str, list[float]]],
    figures: micro.Figures,
    args: argparse.Namespace,
) -> str:
    stores = ", ".join(
        f"{STORE_NAMES[store]} {args.sqlite_requests if store == 'sqlite' else args.requests}"
        for store in args.stores
    )
    contract = [("figure", "slashgate", "anchor", "ratio", "goal"), *figures.rows()]
    return "\n".join(
        [
            f"slashgate bench: {machine()}",
            f"requests per round and server after {args.warmup} warm-up: {stores}, anchors "
            f"{args.requests}; {args.workers} connections, {args.rounds} rounds (each server "
            "first in turn), a fresh state file per SQLite server; medians with (min-max) "
            "over rounds",
            "",
            *aligned(servers_rows(pairs, ack_rows, args.stores)),
            "",
            *aligned(contract),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=3000, help="per round and server")
    parser.add_argument(
        "--sqlite-requests", type=int, default=3000, help="per round, slashgate on SQLite"
    )
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--workers", type=int, default=16, help="concurrent connections")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--acks", type=int, default=200, help="Slack acks timed one at a time")
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument(
        "--stores",
        nargs="+",
        choices=tuple(STORE_NAMES),
        default=list(STORE_NAMES),
        help="slashgate's state stores, each beside the anchor (default both)",
    )
    parser.add_argument("--only", nargs="*", default=[], help="pair names to run (default all)")
    parser.add_argument("--verbose", action="store_true", help="calls seen by the fakes")
    args = parser.parse_args()
    pairs, acks = asyncio.run(servers_section(args))
    ack_rows = {
        "Slack slash ack, one at a time (ms)": asyncio.run(
            slack_acks_apart(args.acks, args.stores)
        ),
        "  the same, the fake Slack in the bench's process": acks,
    }
    figures = micro.measure(args.conversations)
    print(table(pairs, ack_rows, figures, args))


if __name__ == "__main__":
    main()
