"""The loop watchdog fails a test whose event loop is blocked, and leaves a working one alone:
a loop that spins is caught by its CPU time, one asleep in a system call by the wall bound,
and one merely starved of CPU by other processes is not taken for blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tests.conftest import ROOT
from tests.loop_watchdog import LoopBlocked, Watchdog

INNER_TESTS = """
import asyncio
import time

import pytest


def spin_forever() -> None:
    while True:
        pass


def spin_for(cpu_s: float) -> None:
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass


async def test_spins() -> None:
    spin_forever()


@pytest.mark.asyncio(loop_scope="session")
async def test_spins_on_the_sessions_loop() -> None:
    spin_forever()


async def test_sleeps_blocking() -> None:
    while True:
        time.sleep(0.05)


async def test_awaits() -> None:
    await asyncio.sleep(4.5)


def test_sync_spins() -> None:
    spin_for(0.6)


@pytest.mark.blocks_loop(3, reason="spins on purpose")
async def test_allowed_to_block() -> None:
    spin_for(0.6)


async def test_collects_a_big_heap() -> None:
    import gc

    heap = [[i] for i in range(1_000_000)]  # fifteen full collections of it take a second or more
    for _ in range(15):
        gc.collect()
    del heap


@pytest.fixture
async def slow_setup() -> None:
    spin_forever()


async def test_blocked_in_a_fixture(slow_setup: None) -> None:
    pass
"""


def test_the_watchdog_fails_blocked_loops_and_leaves_waiting_ones_alone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_inner=INNER_TESTS)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    # 0.5 s of CPU, 4 s of wall time. Every inner test that must pass stays far inside both
    # (CPU spent, not wall time, is what they measure), so a loaded machine fails none; and
    # a spin reaches its 0.5 s of CPU before the wall bound unless it gets under 1/8 of a core
    # (under CI's load it got a quarter, and a wall bound of 4 times the limit caught it first).
    # Half the suite's own limit, so the blocking cases, which wait for the bounds, take half.
    monkeypatch.setenv("SLASHGATE_LOOP_WATCHDOG_S", "0.5")
    monkeypatch.setenv("SLASHGATE_LOOP_WATCHDOG_WALL_FACTOR", "8")
    # A watchdog that does not fire leaves test_spins spinning: the timeout fails this test.
    out = pytester.runpytest_subprocess(
        "-p", "tests.loop_watchdog", "-rA", timeout=120
    ).stdout.str()

    # A pure-Python spin is broken once it used the limit of CPU, and named in the failure.
    assert "FAILED test_inner.py::test_spins" in out
    assert "the event loop was blocked: it used" in out
    assert "in spin_forever" in out
    # So is one on the session's event loop (the browser tests'): its watchdog is on that loop.
    assert "FAILED test_inner.py::test_spins_on_the_sessions_loop" in out
    # A loop asleep in a system call uses no CPU: it fails at the wall bound, naming the line.
    assert "FAILED test_inner.py::test_sleeps_blocking" in out
    assert "s of wall time" in out
    assert "time.sleep(0.05)" in out
    # A fixture's set-up runs on the same loop and is watched too.
    assert "test_inner.py::test_blocked_in_a_fixture" in out
    assert "PASSED test_inner.py::test_blocked_in_a_fixture" not in out
    # Waiting on the loop past both bounds, spinning outside it, spinning with leave, or the
    # collector's pauses (which grow with the test process's heap) are not failures.
    for name in (
        "test_awaits",
        "test_sync_spins",
        "test_allowed_to_block",
        "test_collects_a_big_heap",
    ):
        assert f"PASSED test_inner.py::{name}" in out
        assert f"ERROR test_inner.py::{name}" not in out


# A process that spins on its core until it is killed; its line says it runs.
SPIN = "import sys\nsys.stdout.write('spinning\\n')\nsys.stdout.flush()\nwhile True:\n    pass\n"


def spin_for(cpu_s: float) -> None:
    end = time.thread_time() + cpu_s
    while time.thread_time() < end:
        pass


def run_watched(body: Callable[[], object], limit_s: float, wall_s: float) -> Watchdog:
    """Runs ``body`` in one callback of a new loop on this thread, under a watchdog of its own."""
    dogs: list[Watchdog] = []

    async def run() -> None:
        with Watchdog(asyncio.get_running_loop(), limit_s, wall_s) as dog:
            dogs.append(dog)
            body()

    with contextlib.suppress(LoopBlocked):
        asyncio.run(run())
    return dogs[0]


def test_a_spinning_loop_is_caught_by_its_cpu_time() -> None:
    def spin_forever() -> None:
        while True:
            pass

    dog = run_watched(spin_forever, limit_s=0.3, wall_s=300)
    assert dog.blocked_why.startswith("used")
    assert "in spin_forever" in (dog.blocked_stack or "")


def test_a_loop_asleep_in_a_system_call_is_caught_at_the_wall_bound() -> None:
    started = time.monotonic()

    def sleep_forever() -> None:
        while True:
            time.sleep(0.05)

    dog = run_watched(sleep_forever, limit_s=0.3, wall_s=2.0)
    assert "s of wall time" in dog.blocked_why
    assert "time.sleep(0.05)" in (dog.blocked_stack or "")
    # Not before the wall bound (less the probe's first tick, sent before the sleep began).
    assert time.monotonic() - started > 2.0 - 0.1


@pytest.fixture
def a_crowded_core() -> Iterator[None]:
    """This thread pinned to one core, three processes spinning on that core beside it."""
    own = os.sched_getaffinity(0)
    core = {min(own)}
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(3):
            spinner = subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE)
            spinners.append(spinner)
            os.sched_setaffinity(spinner.pid, core)
        for spinner in spinners:
            assert spinner.stdout is not None
            assert spinner.stdout.readline() == b"spinning\n"
        os.sched_setaffinity(0, core)
        yield
    finally:
        os.sched_setaffinity(0, own)
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


@pytest.mark.usefixtures("a_crowded_core")
def test_a_loop_starved_of_cpu_is_not_taken_for_blocked() -> None:
    took: list[float] = []

    def work() -> None:
        started = time.monotonic()
        spin_for(0.5)
        took.append(time.monotonic() - started)

    dog = run_watched(work, limit_s=1.0, wall_s=300)
    # Its 0.5 s of CPU took more wall time than the limit (the three spinners had the core
    # most of the time): a watchdog on wall time would have failed it.
    assert took[0] > 1.0
    assert dog.blocked_stack is None
