"""Approvals outlive the processes and servers that hold them: on SQLite, a gateway killed
with SIGKILL right after an approval (its own, or the CLI's while it ran) loses neither;
on Redis with persistence (the append-only file, as the deployment runs it), an approval is
there after Redis restarts, and honoured. No bound on the store's keys evicts them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from gateway.access import Access, Books, Policy
from gateway.inbound import InboundMessage
from gateway.metrics import Metrics
from gateway.state import MemoryStore, SqliteStore, StateStore
from gateway.state.redis import RedisStore
from gateway.state.sqlite import _PRUNE_EVERY
from tests.access.cli import access
from tests.conftest import ROOT, make_settings
from tests.redis_server import needs_redis, redis_server

POLICY = Policy(chat=True)  # the defaults: pairing
WAIT = 60.0  # seconds for a process of its own to start on a busy machine


def direct(user: str) -> InboundMessage:
    return InboundMessage("telegram", user, user, "hello", direct=True)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_the_access_records_outlast_the_bound_on_keys(kind: str, tmp_path: Path) -> None:
    bound = 20
    store: StateStore = (
        SqliteStore(tmp_path / "state.sqlite3", max_keys=bound)
        if kind == "sqlite"
        else MemoryStore(max_items=bound)
    )
    await store.open()
    try:
        await Books(store).change("telegram", lambda book: book.allow("41", "owner"))
        for n in range(3 * _PRUNE_EVERY):  # conversations come and go, long after
            await store.set(f"conversation-{n}", n)
        assert await store.get("conversation-0") is None  # the bound holds
        assert (await Books(store).of("telegram")).role("41") == "owner"
    finally:
        await store.close()


async def test_approvals_survive_sigkill_of_the_gateway_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / "state.sqlite3")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    gateway = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.access.writer", path,
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert gateway.stdout is not None
        approved = await asyncio.wait_for(gateway.stdout.readline(), WAIT)
        assert approved == b"approved 41\n"
        code = (await asyncio.wait_for(gateway.stdout.readline(), WAIT)).split()[1].decode()
        cli = {"SLASHGATE_STORE": "sqlite", "SLASHGATE_STATE_PATH": path}
        said = await access(cli, "approve", "telegram", code)  # while the gateway runs
        assert said.status == 0, said.err
    finally:
        gateway.send_signal(signal.SIGKILL)
        await gateway.wait()
    assert gateway.returncode == -signal.SIGKILL

    store = SqliteStore(path)  # the gateway started again on the same file
    await store.open()
    try:
        again = Access(make_settings(), store, Metrics())
        assert await again.admit(direct("41"), POLICY) is None
        assert await again.admit(direct("42"), POLICY) is None
        assert await again.admit(direct("43"), POLICY) is not None  # still closed to others
        assert await again.is_owner("telegram", "41")  # approved first: the owner
    finally:
        await store.close()


@needs_redis
async def test_an_approval_survives_a_restart_of_redis_with_persistence(tmp_path: Path) -> None:
    settings = make_settings()
    async with redis_server(tmp_path, persistent=True) as server:
        store = RedisStore(server.url, "slashgate:")
        await store.open()
        try:
            replica = Access(settings, store, Metrics())
            replica.configure("telegram", POLICY)
            assert await replica.admit(direct("41"), POLICY) is not None  # a pairing code
            [code] = (await replica.books.of("telegram")).waiting(time.time())
            said = await replica.approve("telegram", code)  # /pair's way; the CLI's is the same
            assert said.startswith("Approved 41"), said
            await server.restart(graceful=True)  # as an operator restarts it
        finally:
            await store.close()

        store = RedisStore(server.url, "slashgate:")  # the gateway, started again
        await store.open()
        try:
            again = Access(settings, store, Metrics())
            assert await again.admit(direct("41"), POLICY) is None
            assert await again.admit(direct("42"), POLICY) is not None
        finally:
            await store.close()
