"""Isolation with the real pi: ending a conversation's pi (``/new``, shutdown) ends what it
started too, and ``slashgate serve`` exits on SIGTERM within the grace with pi stuck mid-turn.

pi runs behind a shell that starts a ``sleep`` (a tool's process, say) ignoring SIGTERM and
then becomes pi (``exec``: same pid), writing both pids to a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import aiohttp

from gateway.runtimes.stdio import pid_exited as ended
from tests.pi import test_pi_runtime
from tests.pi.mock_openai import serve
from tests.pi.test_pi_runtime import WAIT, pi_binary, pi_gateway, pi_home, send, start
from tests.processes import group, reply_of, running, serving, terminate

pytestmark = test_pi_runtime.pytestmark  # without pi these skip, saying why, as those do

WRAPPER = (
    "trap '' TERM; sleep 1000 </dev/null >/dev/null 2>&1 & "
    'echo "$$ $!" >> "$0"; trap - TERM; exec "$1" --mode rpc'
)


def wrapped(pids: Path) -> list[str]:
    return ["sh", "-c", WRAPPER, str(pids), pi_binary()]


def started(pids: Path) -> list[tuple[int, int]]:
    """(pi, its sleep) for every pi started so far."""
    if not pids.exists():
        return []
    return [(int(a), int(b)) for a, b in (line.split() for line in pids.read_text().splitlines())]


@contextlib.contextmanager
def reaped(pids: Path) -> Iterator[None]:
    """Whatever a failing test left running goes, so that it cannot outlive the test run."""
    try:
        yield
    finally:
        for pi, sleeper in started(pids):
            for pid in (pi, sleeper):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


async def test_new_and_stop_end_pi_and_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with reaped(pids):
        async with pi_gateway(tmp_path, pi_command=wrapped(pids)) as (gw, _):
            assert (await send(gw, "hi")).text == "echo: hi"
            [(pi, sleeper)] = started(pids)
            assert sorted(group(pi)) == sorted([pi, sleeper])
            assert (await send(gw, "/new")).text == "Started a new session."
            await asyncio.wait_for(ended(sleeper), WAIT)  # it ignores SIGTERM: killed
            assert not running(pi) and group(pi) == []

            assert (await send(gw, "hi again")).text == "echo: hi again"
            [_, (pi, sleeper)] = started(pids)
            assert running(pi) and running(sleeper)
        await asyncio.wait_for(ended(sleeper), WAIT)
        assert not running(pi) and group(pi) == []


async def test_pi_that_stops_answering_is_ended_with_its_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with reaped(pids):
        async with pi_gateway(tmp_path, pi_command=wrapped(pids), cancel_grace=1.0) as (gw, _):
            sink, turn = start(gw, "[hold] forever")
            await asyncio.wait_for(sink.first_delta.wait(), WAIT)
            [(pi, sleeper)] = started(pids)
            os.kill(pi, signal.SIGSTOP)  # answers nothing from now on, not even an abort
            assert (await send(gw, "/cancel")).text == "Cancelled the running turn."
            await asyncio.wait_for(turn, WAIT)
            assert sink.text == "thinking\n\n_(cancelled)_"
        await asyncio.wait_for(ended(sleeper), WAIT)
        assert not running(pi) and group(pi) == []


async def test_sigterm_with_pi_stuck_mid_turn_exits_within_the_grace(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    grace = 1.0
    work = tmp_path / "work"
    work.mkdir()
    with reaped(pids):
        async with serve() as model:
            settings = {
                "SLASHGATE_RUNTIME": "pi",
                "SLASHGATE_PI_COMMAND": json.dumps(wrapped(pids)),
                "SLASHGATE_PI_CWD": str(work),
                "SLASHGATE_PI_ENV": json.dumps(
                    {"HOME": str(pi_home(tmp_path, model)), "PI_OFFLINE": "1"}
                ),
                "SLASHGATE_CANCEL_GRACE": str(grace),
                "SLASHGATE_INVENTORY_WAIT": str(WAIT / 3),
            }
            async with serving(settings, WAIT) as served, aiohttp.ClientSession() as http:
                body = {"conversation": "c1", "user": "u", "text": "[hold] forever"}
                posted = asyncio.ensure_future(http.post(f"{served.url}/v1/messages", json=body))
                await asyncio.wait_for(model.holding.wait(), WAIT)
                [(pi, sleeper)] = started(pids)
                os.kill(pi, signal.SIGSTOP)  # stuck: no abort is ever answered

                # The grace goes to the unanswered abort, half a second to the kill grace of
                # pi's group (pi is stopped, its sleep ignores SIGTERM).
                code, elapsed = await terminate(served, WAIT)
                assert code == 0 and elapsed < grace + 2, (code, elapsed)
                reply = await reply_of(posted, WAIT)
                # Cancelled (whether pi had passed on its first words or not): one reply.
                assert reply["stop_reason"] == "cancelled"
                assert reply["text"].endswith("_(cancelled)_")
        await asyncio.wait_for(ended(sleeper), WAIT)
        assert not running(pi) and group(pi) == []
