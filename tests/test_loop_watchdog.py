"""The loop watchdog fails a test whose event loop is blocked, and leaves a working one alone."""

from __future__ import annotations

import os

import pytest

from tests.conftest import ROOT

INNER_TESTS = """
import asyncio
import time

import pytest


def spin_forever() -> None:
    while True:
        pass


async def test_spins() -> None:
    spin_forever()


async def test_sleeps_blocking() -> None:
    time.sleep(1.6)


async def test_awaits() -> None:
    await asyncio.sleep(1.3)


def test_sync_sleeps() -> None:
    time.sleep(1.3)


@pytest.mark.blocks_loop(3, reason="measures a blocking call on purpose")
async def test_allowed_to_block() -> None:
    time.sleep(1.3)


async def test_collects_a_big_heap() -> None:
    import gc

    heap = [[i] for i in range(1_000_000)]  # thirty full collections of it take seconds
    for _ in range(30):
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
    monkeypatch.setenv("SLASHGATE_LOOP_WATCHDOG_S", "1.0")
    # A watchdog that does not fire leaves test_spins spinning: the timeout fails this test.
    out = pytester.runpytest_subprocess(
        "-p", "tests.loop_watchdog", "-rA", timeout=120
    ).stdout.str()

    # A pure-Python spin is broken at once and named in the failure.
    assert "FAILED test_inner.py::test_spins" in out
    assert "the event loop made no progress" in out
    assert "in spin_forever" in out
    # A blocking C call cannot be interrupted, but fails once it returns, naming the line.
    assert "test_inner.py::test_sleeps_blocking" in out
    assert "time.sleep(1.6)" in out
    # A fixture's set-up runs on the same loop and is watched too.
    assert "test_inner.py::test_blocked_in_a_fixture" in out
    assert "PASSED test_inner.py::test_blocked_in_a_fixture" not in out
    # Waiting on the loop, blocking outside it, blocking with leave, or the collector's pauses
    # (which grow with the test process's heap) are not failures.
    for name in (
        "test_awaits",
        "test_sync_sleeps",
        "test_allowed_to_block",
        "test_collects_a_big_heap",
    ):
        assert f"PASSED test_inner.py::{name}" in out
        assert f"ERROR test_inner.py::{name}" not in out
