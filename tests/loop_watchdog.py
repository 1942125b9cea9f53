"""A pytest plugin that fails an async test whose event loop stops making progress.

A hang in the gateway (a chunker that never returns, a blocking call on the loop) used to
show up as a suite that ran into CI's time limit. Here a thread beside the loop posts a probe
callback onto it; when a probe has waited past a bound while the loop was running, the loop
is blocked: the thread records the loop thread's stack, raises ``LoopBlocked`` inside it
(which breaks out of a pure-Python loop at once), and the test fails with that stack.

Two bounds, the first one reached fails the test:

- **CPU**: the loop thread used more than the limit of CPU time (its own clock,
  ``pthread_getcpuclockid``) without answering the probe. A hang in Python code burns CPU,
  so it is caught after the limit of CPU time however loaded the machine is, and a loop that
  is merely starved of CPU (other processes or threads busy on its core, as on a 2-core CI
  runner with 3 xdist workers) uses none while it waits, so it is never taken for blocked.
- **wall**: no answer for ten times the limit of wall time. A loop blocked in a system call
  (``time.sleep``, a blocking socket read, a lock) burns no CPU: this bound catches it, late
  enough that a starved loop's own work does not reach it.

The collector's pauses are left out of both: they grow with the heap of a test process that
ran hundreds of tests before, not with the code under test.

The limit is 1 s of CPU (``SLASHGATE_LOOP_WATCHDOG_S`` changes it; 0 turns the watchdog off),
the wall bound that many times the limit (``SLASHGATE_LOOP_WATCHDOG_WALL_FACTOR``, 10). A test
that blocks its loop on purpose says so with ``@pytest.mark.blocks_loop(seconds,
reason=...)``: its limit is ``seconds``, its wall bound the factor times that.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import inspect
import os
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

LIMIT_S = float(os.environ.get("SLASHGATE_LOOP_WATCHDOG_S", "1.0"))
WALL_FACTOR = float(os.environ.get("SLASHGATE_LOOP_WATCHDOG_WALL_FACTOR", "10"))
_TICK_S = 0.1


class LoopBlocked(BaseException):
    """Raised inside a loop that made no progress for longer than the watchdog's limit.

    A BaseException, so that ``except Exception`` in the blocked code cannot swallow it.
    """


class _Collecting:
    """Seconds spent in the garbage collector so far, kept by a gc callback."""

    def __init__(self) -> None:
        self.total = 0.0
        self._started: float | None = None

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.monotonic()
        elif self._started is not None:
            self.total += time.monotonic() - self._started
            self._started = None

    def so_far(self) -> float:
        """The total, with a collection still under way counted up to now."""
        started = self._started
        return self.total + (time.monotonic() - started if started is not None else 0.0)


_collecting = _Collecting()
gc.callbacks.append(_collecting)


class Watchdog:
    """Watches one running loop from a thread of its own; made on the loop's thread."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, limit_s: float, wall_s: float | None = None
    ) -> None:
        self._loop = loop
        self.limit_s = limit_s
        self.wall_s = WALL_FACTOR * limit_s if wall_s is None else wall_s
        self._loop_thread = threading.get_ident()
        self._loop_clock = time.pthread_getcpuclockid(self._loop_thread)
        self._stop = threading.Event()
        self._probe_sent: float | None = None
        self._cpu_at_probe = 0.0
        self._gc_at_probe = 0.0
        self.blocked_stack: str | None = None
        self.blocked_why = ""
        self._thread = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _answered(self) -> None:
        self._probe_sent = None

    def _loop_cpu(self) -> float:
        return time.clock_gettime(self._loop_clock)

    def _watch(self) -> None:
        while not self._stop.wait(_TICK_S):
            if self._loop.is_closed() or not self._loop.is_running():
                # Between fixtures and the test the loop is idle, not blocked.
                self._probe_sent = None
                continue
            now = time.monotonic()
            sent = self._probe_sent
            if sent is None:
                self._probe_sent = now
                self._cpu_at_probe = self._loop_cpu()
                self._gc_at_probe = _collecting.so_far()
                try:
                    self._loop.call_soon_threadsafe(self._answered)
                except RuntimeError:  # closed between the check and the call
                    self._probe_sent = None
                continue
            collecting = _collecting.so_far() - self._gc_at_probe
            waited = now - sent - collecting
            # The collector's pauses are wall time, at least the CPU they took.
            used = self._loop_cpu() - self._cpu_at_probe - collecting
            if self.blocked_stack is not None:
                continue
            if used > self.limit_s:
                self._report(f"used {used:.1f} s of CPU (limit {self.limit_s:.1f} s)")
            elif waited > self.wall_s:
                self._report(
                    f"made no progress for {waited:.1f} s of wall time, using {used:.1f} s"
                    f" of CPU (wall bound {self.wall_s:.1f} s: blocked in a system call?)"
                )

    def _report(self, why: str) -> None:
        frame = sys._current_frames().get(self._loop_thread)
        frames = traceback.extract_stack(frame) if frame is not None else []
        # The frames below the loop's callback are pytest's and asyncio's, the same each time.
        callbacks = [i for i, f in enumerate(frames) if f.filename.endswith("asyncio/events.py")]
        stack = "".join(traceback.format_list(frames[callbacks[-1] + 1 :] if callbacks else frames))
        self.blocked_why = why
        self.blocked_stack = stack
        # Breaks a pure-Python loop where it stands; a blocking C call ends first.
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(self._loop_thread), ctypes.py_object(LoopBlocked)
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "blocks_loop(seconds, reason): this test blocks its event loop on purpose for up to"
        " `seconds` of CPU; the loop watchdog allows that much (and its wall factor times it)",
    )


def _limit_for(item: pytest.Item) -> float:
    mark = item.get_closest_marker("blocks_loop")
    if mark is None:
        return LIMIT_S
    return max(LIMIT_S, float(mark.args[0]))


@contextlib.contextmanager
def _watched(request: pytest.FixtureRequest) -> Iterator[None]:
    """The watchdog on the running loop while in the block; the test fails if it was blocked."""
    with Watchdog(asyncio.get_running_loop(), _limit_for(request.node)) as dog:
        yield
    if dog.blocked_stack is not None:
        pytest.fail(
            f"the event loop was blocked: it {dog.blocked_why} before answering the"
            f" watchdog's probe; it was blocked here:\n{dog.blocked_stack}",
            pytrace=False,
        )


# An async fixture runs on the loop of its own loop scope: one watchdog for the tests on a
# loop of their own (the default), one for those on the session's loop (the browser tests).
@pytest_asyncio.fixture(loop_scope="function")
async def _loop_watchdog(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    with _watched(request):
        yield


@pytest_asyncio.fixture(loop_scope="session")
async def _session_loop_watchdog(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    with _watched(request):
        yield


def _loop_scope(item: pytest.Item) -> str:
    mark = item.get_closest_marker("asyncio")
    return (mark.kwargs.get("loop_scope") if mark else None) or "function"


@pytest.fixture(autouse=True)
def loop_watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    """Arms the watchdog for coroutine tests only: a sync test runs no loop to watch."""
    # A hypothesis test's function is its sync wrapper: the coroutine is its inner test.
    test = getattr(getattr(request.function, "hypothesis", None), "inner_test", request.function)
    if LIMIT_S > 0 and inspect.iscoroutinefunction(test):
        session = _loop_scope(request.node) == "session"
        request.getfixturevalue("_session_loop_watchdog" if session else "_loop_watchdog")
    yield
