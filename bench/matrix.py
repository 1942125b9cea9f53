"""The Matrix channel against a mautrix echo bot on the same homeserver, in one run.

``python bench/matrix.py`` starts a real Synapse (tests/matrix/synapse.py, as the tests do:
``make synapse`` installs it), registers two bots and a person, opens ``--rooms`` direct
rooms between the person and each bot (the bots join before they start), and starts two bots,
each in a process of its own:

- ``slashgate``: the gateway with its Matrix channel on the embedded demo runtime; the
  message is ``/echo m<n>`` (journaled, answered by a notice that replies to it);
- ``mautrix``: a ``mautrix.client.Client`` as mautrix documents it (its own sync loop and
  state store, a handler for ``m.room.message``) that answers ``/echo TEXT`` with a notice
  replying to the message.

Each round (the two bots alternate, each first in turn) the person, in this process, writes
``--messages`` messages over its rooms (one waiting message a room), each waiting for the
bot's reply (seen in the person's own sync) before the next one in that room. Printed: the
bot's CPU time per message (utime + stime from ``/proc/<pid>/stat``, ms; Synapse's is not in
it) and messages per second (this process's count over its wall time), the median with
(min-max) over the rounds, and the ratio slashgate / mautrix (median of the rounds' ratios,
with their range). ``--profile FILE`` runs the slashgate bot under cProfile and writes its
statistics there when it stops.

``python bench/matrix.py serve KIND HOMESERVER TOKEN`` is one bot (it prints ``listening
on ...`` once it serves). Nothing here is a test: no figure fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load import Server, cpu_seconds  # noqa: E402
from bench.servers import UNPACED, serve_slashgate, until_terminated  # noqa: E402
from bench.table import aligned, spread  # noqa: E402
from tests.matrix.synapse import Synapse, why_no_synapse  # noqa: E402

REPLY_WAIT = 60.0  # seconds: a reply that takes longer means the bot is broken
READY_WITHIN = 60.0
KINDS = ("slashgate", "mautrix")
# The person's sync: the bots' messages alone, nothing else (this process is the client).
PERSON_FILTER = json.dumps(
    {
        "presence": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
        "room": {
            "timeline": {"limit": 100, "types": ["m.room.message"]},
            "state": {"types": []},
            "ephemeral": {"not_types": ["*"]},
            "account_data": {"not_types": ["*"]},
        },
    }
)


# -- the bots ------------------------------------------------------------------------------


async def mautrix_bot(homeserver: str, token: str) -> None:
    from mautrix.api import HTTPAPI
    from mautrix.client import Client, InternalEventType
    from mautrix.client.state_store import MemoryStateStore, MemorySyncStore
    from mautrix.types import EventType, MessageEvent, MessageType, TextMessageEventContent

    async with aiohttp.ClientSession() as session:
        api = HTTPAPI(homeserver, token, client_session=session)
        client = Client(api=api, sync_store=MemorySyncStore(), state_store=MemoryStateStore())
        client.mxid = (await client.whoami()).user_id
        client.ignore_initial_sync = True  # history is not answered, as slashgate's first sync

        async def echo(evt: MessageEvent) -> None:
            body = evt.content.body or ""
            if evt.sender == client.mxid or not body.startswith("/echo "):
                return
            reply = TextMessageEventContent(msgtype=MessageType.NOTICE, body=body[6:])
            reply.set_reply(evt)
            await client.send_message(evt.room_id, reply)

        synced = asyncio.Event()

        async def first_sync(data: Any) -> None:
            synced.set()

        client.add_event_handler(EventType.ROOM_MESSAGE, echo)
        client.add_event_handler(InternalEventType.SYNC_SUCCESSFUL, first_sync)
        syncing = client.start(None)
        await synced.wait()
        print("listening on mautrix", flush=True)
        await until_terminated()
        client.stop()
        await asyncio.gather(syncing, return_exceptions=True)


async def slashgate_bot(homeserver: str, token: str) -> None:
    from pydantic import SecretStr

    settings: dict[str, Any] = {
        "port": 0,
        "log_level": "WARNING",
        "store": os.environ.get("BENCH_STORE", "memory"),
        "matrix_homeserver": homeserver,
        "matrix_access_token": SecretStr(token),
        # The pacer runs, but never waits: the mautrix bot sends as fast as it can.
        "matrix_rate_room": UNPACED,
        "matrix_rate_global": UNPACED,
    }
    profile = os.environ.get("BENCH_PROFILE")
    if not profile:
        await serve_slashgate(settings)
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        await serve_slashgate(settings)
    finally:
        profiler.disable()
        profiler.dump_stats(profile)


async def start(kind: str, homeserver: str, token: str, profile: str | None) -> Server:
    """The bot in a process of its own, once it answers what comes."""
    env = dict(os.environ)
    if profile and kind == "slashgate":
        env["BENCH_PROFILE"] = profile
    server = await Server.spawn(kind, [str(Path(__file__)), "serve", kind, homeserver, token], env)
    if kind == "slashgate":  # ready once its first sync is handled (/readyz)
        async with aiohttp.ClientSession() as session, asyncio.timeout(READY_WITHIN):
            while True:
                async with session.get(f"{server.url}/readyz") as response:
                    if response.status == 200:
                        break
                await asyncio.sleep(0.1)  # polling another process: nothing to await
    return server


# -- the person ----------------------------------------------------------------------------


class Person:
    """The person's HTTP calls, and its sync resolving each message's waiter with the bot's
    reply to it.
    """

    def __init__(self, session: aiohttp.ClientSession, homeserver: str, token: str) -> None:
        self.session = session
        self.base = f"{homeserver}/_matrix/client/v3"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.waiters: dict[str, asyncio.Future[str]] = {}
        # Replies the sync saw before their message's send returned (the bot can be quicker).
        self.early: dict[str, str] = {}
        self._txn = itertools.count()
        self._task: asyncio.Task[None] | None = None

    async def call(
        self, method: str, path: str, body: Any = None, token: str | None = None, **query: str
    ) -> Any:
        headers = self.headers if token is None else {"Authorization": f"Bearer {token}"}
        url = f"{self.base}{path}"
        async with self.session.request(
            method, url, json=body, params=query, headers=headers
        ) as response:
            answer = await response.json()
            if response.status != 200:
                raise RuntimeError(f"{method} {path} answered {response.status}: {answer}")
            return answer

    async def direct_room(self, bot: str, bot_token: str) -> str:
        """A new direct room with ``bot``, which has joined it."""
        body = {"preset": "trusted_private_chat", "is_direct": True, "invite": [bot]}
        room = str((await self.call("POST", "/createRoom", body))["room_id"])
        await self.call("POST", f"/join/{room}", {}, token=bot_token)
        return room

    async def start(self) -> None:
        since = (await self.call("GET", "/sync", timeout="0", filter=PERSON_FILTER))["next_batch"]
        self._task = asyncio.create_task(self._sync(since))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _sync(self, since: str) -> None:
        while True:
            data = await self.call(
                "GET", "/sync", since=since, timeout="30000", filter=PERSON_FILTER
            )
            since = data["next_batch"]
            for room in data.get("rooms", {}).get("join", {}).values():
                for event in room.get("timeline", {}).get("events", []):
                    content = event.get("content", {})
                    reply = content.get("m.relates_to", {}).get("m.in_reply_to", {})
                    to, text = reply.get("event_id"), str(content.get("body", ""))
                    if not isinstance(to, str):
                        continue
                    waiter = self.waiters.pop(to, None)
                    if waiter is None:
                        self.early[to] = text
                    elif not waiter.done():
                        waiter.set_result(text)

    async def echo(self, room: str, text: str) -> None:
        """``/echo text`` into the room, once the bot's reply to it says ``text``."""
        body = {"msgtype": "m.text", "body": f"/echo {text}"}
        path = f"/rooms/{room}/send/m.room.message/bench{os.getpid()}-{next(self._txn)}"
        event_id = str((await self.call("PUT", path, body))["event_id"])
        replied = self.early.pop(event_id, None)
        if replied is None:
            waiter = self.waiters[event_id] = asyncio.get_running_loop().create_future()
            replied = await asyncio.wait_for(waiter, REPLY_WAIT)
        if replied != text:
            raise RuntimeError(f"the bot replied {replied!r} to {text!r}")


# -- the load ------------------------------------------------------------------------------

_numbers = itertools.count()


async def load(person: Person, server: Server, rooms: list[str], count: int) -> tuple[float, float]:
    """(CPU seconds of the bot, wall seconds) for ``count`` messages over ``rooms``."""
    numbers = iter(range(count))

    async def writer(room: str) -> None:
        for _ in numbers:
            await person.echo(room, f"m{next(_numbers)}")

    cpu, wall = cpu_seconds(server.process.pid), time.perf_counter()
    await asyncio.gather(*(writer(room) for room in rooms))
    return cpu_seconds(server.process.pid) - cpu, time.perf_counter() - wall


async def bench(args: argparse.Namespace) -> None:
    why = why_no_synapse()
    if why is not None:
        sys.exit(f"bench/matrix.py: {why}")
    with tempfile.TemporaryDirectory(prefix="slashgate-bench-synapse-") as folder:
        synapse = Synapse(Path(folder))
        await asyncio.to_thread(synapse.start)
        try:
            await measure(synapse, args)
        finally:
            await asyncio.to_thread(synapse.stop)


async def published(person: Person, rooms: list[str], bot: str) -> None:
    """Until the slashgate bot's start-up work is done: its command list in each of its
    rooms, every command's description too (the mautrix bot publishes nothing).
    """
    from channels.matrix.commands import MSC4332, MSC4391, msc4391_key

    async with asyncio.timeout(READY_WITHIN):
        for room in rooms:
            while True:
                try:
                    listed = await person.call("GET", f"/rooms/{room}/state/{MSC4332}/{bot}")
                    for command in listed["commands"]:
                        name = command["syntax"].split()[0]
                        key = quote(msc4391_key(name, bot), safe="")
                        await person.call("GET", f"/rooms/{room}/state/{MSC4391}/{key}")
                    break
                except RuntimeError:  # not written yet (404)
                    await asyncio.sleep(0.2)  # another process's work: nothing to await


async def measure(synapse: Synapse, args: argparse.Namespace) -> None:
    bots = {kind: await asyncio.to_thread(synapse.account, f"bench_{kind}") for kind in KINDS}
    who = await asyncio.to_thread(synapse.account, "bench_person")
    cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
    rate: dict[str, list[float]] = {kind: [] for kind in KINDS}
    async with aiohttp.ClientSession() as session:
        person = Person(session, synapse.url, who.token)
        rooms = {
            kind: [await person.direct_room(bot.user_id, bot.token) for _ in range(args.rooms)]
            for kind, bot in bots.items()
        }
        servers = {
            kind: await start(kind, synapse.url, bot.token, args.profile)
            for kind, bot in bots.items()
        }
        await person.start()
        try:
            await published(person, rooms["slashgate"], bots["slashgate"].user_id)
            for kind, server in servers.items():
                await load(person, server, rooms[kind], args.warmup)
            for turn in range(args.rounds):
                order = KINDS if turn % 2 == 0 else KINDS[::-1]
                for kind in order:
                    used, wall = await load(person, servers[kind], rooms[kind], args.messages)
                    cpu[kind].append(used / args.messages * 1000)
                    rate[kind].append(args.messages / wall)
        finally:
            await person.stop()
            for server in servers.values():
                await server.stop()
    ratios = [s / m for s, m in zip(cpu["slashgate"], cpu["mautrix"], strict=True)]
    print(
        f"Matrix /echo, {args.rounds} rounds of {args.messages} messages over {args.rooms} "
        f"direct rooms a bot, after {args.warmup} warm-up; medians with (min-max) over rounds"
    )
    rows: list[tuple[str, ...]] = [("bot", "CPU ms/message", "messages/s (client)")]
    for kind in KINDS:
        rows.append((kind, spread(cpu[kind], ".2f"), spread(rate[kind], ".0f")))
    print("\n".join(aligned(rows)))
    print(f"server CPU per message, slashgate / mautrix: {spread(ratios, '.2f')} (goal <= 1.2)")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        kind, homeserver, token = sys.argv[2:5]
        bot = slashgate_bot if kind == "slashgate" else mautrix_bot
        asyncio.run(bot(homeserver, token))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=500, help="timed messages a round")
    parser.add_argument("--rooms", type=int, default=8, help="direct rooms a bot (at once)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--profile", help="cProfile the slashgate bot into this file")
    asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    main()
