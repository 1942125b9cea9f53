"""slashgate's hot path against its anchors, measured side by side in one run: ``make bench``.

The machine is shared and noisy, so every server figure is a ratio against an anchor measured
in the same run, each server going first in turn from round to round. slashgate runs on each
of ``--stores``: the memory store and SQLite, the default of ``slashgate serve`` (a fresh
state file per server process, ``synchronous=FULL``), each beside the same anchor.

- server CPU per request: utime + stime of the server process (``/proc/<pid>/stat``) read
  before and after ``--requests`` requests (``--sqlite-requests`` on SQLite) that follow a
  warm-up, the load coming from this process over ``--workers`` connections (each a user who
  waits for the answer before writing again); throughput is this process's count over its
  wall time.
  webhook ``/echo hello`` vs a bare aiohttp JSON handler, and that handler doing the
  contract's work of the webhook alone (the floor under the webhook's figure); Telegram
  ``/echo m1`` through to sendMessage vs an aiogram echo bot; a Slack slash command through
  to its reply vs a slack-bolt app (``ack()`` then ``say()``), plus the ack latency of both,
  one at a time (the fake Slack in a process of its own, and in this one as earlier runs
  had it). The web chat is the webhook's ``/v1`` API: its row is the webhook's;
- the contract on one message (classify + payload of 30 characters, microseconds), its cost
  against the input size (classify + payload + validation up to 1 MiB, with the exponent of
  the fit ``time ~ size^k``), and memory per idle conversation (RSS, in a process of its own).

The load and its rounds are in bench/load.py, the table in bench/table.py, the servers in
bench/servers.py, the fake platforms in bench/platforms.py, the single-process figures in
bench/micro.py. Nothing here is a test: no figure fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import micro  # noqa: E402
from bench.load import (  # noqa: E402
    CHATS_PER_USER,
    REPLY_WAIT,
    Pair,
    Server,
    checked,
    drive,
    run_pair,
    slack_command,
    slack_request,
    telegram_request,
    webhook_request,
)  # fmt: skip
from bench.platforms import FakeSlack, FakeTelegram  # noqa: E402
from bench.table import STORE_NAMES, WEBHOOK_FLOOR, table  # noqa: E402

ACK_WARMUP = 20  # commands before the timed ones, for servers started for the ack figure
FLOOR_BODY = {"conversation": "floor", "text": "/agent echo hi"}  # the Slack ack's floor POST


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=3000, help="per round and server")
    parser.add_argument(
        "--sqlite-requests",
        type=int,
        default=1500,
        help="per round, slashgate on SQLite (half: make bench's time stays near what it was)",
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
