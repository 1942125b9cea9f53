"""The load of bench/run.py: its servers (each a process of bench/servers.py), the requests of
its simulated users, and each pair's rounds of server CPU per request.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

from bench.platforms import FakePlatform, FakeSlack
from bench.servers import SLACK_SECRET, TELEGRAM_SECRET

ROOT = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")
REPLY_WAIT = 30.0  # seconds: a reply that takes longer means the server is broken
CHATS_PER_USER = 4  # each simulated user writes in this many chats (channels) in turn


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
        script = [str(ROOT / "bench" / "servers.py"), kind, api]
        return await cls.spawn(kind, script, {**os.environ, "BENCH_STORE": store})

    @classmethod
    async def spawn(cls, kind: str, script: list[str], env: dict[str, str]) -> Server:
        """Python running ``script``, which says "listening on <url>" once it serves."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, *script, cwd=ROOT, stdout=asyncio.subprocess.PIPE, env=env
        )
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
