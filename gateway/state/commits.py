"""Group commit for one SQLite file: a thread of its own runs the operations, and those that
arrive while a commit is in progress share the next transaction and its one fsync. A caller's
await returns once its operation is committed (durable, as ``synchronous`` says); the wait is
bounded by the commit in progress and its own (at most ``MAX_BATCH`` operations each).

A write that need not be durable yet (one statement: the journal's later marks) is
committed at once on the caller's thread, the event loop, when the thread is idle and has
nothing queued, without an fsync (it survives a crash of the process, and reaches the disk
with the thread's next commit, which syncs the whole write-ahead log). That costs less than
the two thread switches. It never waits there: while the thread works, or another process
holds the lock, it goes to the thread; checkpoints are the thread's too.

Both threads use one connection, in turn (``_lock``): a second one would find its page
cache stale after each of the other's commits and read its pages again. Its resting state
suits the loop: ``synchronous=NORMAL`` and no busy timeout; the thread's transactions raise
it to ``synchronous=FULL`` for their commit, and wait for another process's lock themselves.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .base import StoreUnavailable

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]

log = logging.getLogger("slashgate.state")

MAX_BATCH = 256  # operations in one transaction: a short one, also under a burst
CHECKPOINT_EVERY = 256  # commits between two checkpoints of the write-ahead log
BUSY_TIMEOUT = 5.0  # seconds the thread waits for another process's lock
_BUSY_FIRST, _BUSY_CAP = 0.001, 0.05  # seconds between two tries of that lock


@dataclass(slots=True)
class _Job:
    work: Work[Any]
    future: asyncio.Future[Any] | None  # None: nobody waits (errors are logged)
    result: Any = None
    error: Exception | None = None


class GroupCommit:
    """Runs operations on ``db`` in a thread, committed with ``synchronous`` (``"full"`` or
    ``"normal"``), and single writes at once on the loop, until ``stop``.
    """

    def __init__(self, db: sqlite3.Connection, synchronous: str) -> None:
        self.db = db
        self._durable = synchronous.upper() != "NORMAL"
        db.execute("PRAGMA wal_autocheckpoint=0")  # the thread checkpoints
        db.execute("PRAGMA synchronous=NORMAL")  # the loop's writes; the thread's: _commit
        db.execute("PRAGMA busy_timeout=0")  # the loop never waits; the thread: _begin
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="slashgate-sqlite", daemon=True)
        self._lock = threading.Lock()  # held through a transaction, on either thread
        self._submitted = 0  # jobs handed to the thread (counted on the loop)
        self._settled = 0  # of them, those committed or failed (counted under the lock)
        self._commits = 0  # since the last checkpoint
        self._stopped: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: deque[list[_Job]] = deque()  # settled batches, for _loop to take
        # The thread wakes the loop through it: one system call on each side, where
        # call_soon_threadsafe's socket took three.
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    def start(self) -> None:
        """Start the thread; called on the event loop that awaits the operations."""
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._wake, self._woken)
        self._thread.start()

    def submit(self, work: Work[T]) -> asyncio.Future[T]:
        """``work(db)`` in the thread's next transaction; settles once it is committed."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._submitted += 1
        self._jobs.put(_Job(work, future))
        return future

    async def write(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """Run one statement (the rows it returns), written before this returns."""
        rows = self._now(sql, params)
        if rows is not None:
            return rows
        return await self.submit(lambda db: db.execute(sql, params).fetchall())

    def write_soon(self, sql: str, params: tuple[Any, ...]) -> None:
        """Run one statement, nobody waiting: at once when it can, else in the thread's next
        transaction, before every operation asked for afterwards.
        """
        if self._now(sql, params) is None:
            self._submitted += 1
            self._jobs.put(_Job(lambda db: db.execute(sql, params), None))

    async def stop(self) -> None:
        """Commit what was submitted, then end the thread and close both connections."""
        if self._stopped is None:
            self._stopped = asyncio.get_running_loop().create_future()
            self._jobs.put(None)  # the thread closes the connection: a checkpoint of the log
        await asyncio.shield(self._stopped)

    def _now(self, sql: str, params: tuple[Any, ...]) -> list[Any] | None:
        """The statement's rows, committed at once on the loop; None when the thread has
        work (the statement would overtake it) or the file is locked.
        """
        idle = self._submitted == self._settled and self._stopped is None
        if not idle or not self._lock.acquire(blocking=False):
            return None
        try:
            if self._submitted != self._settled:
                return None
            try:
                # Its own transaction, committed once every row is read.
                rows = self.db.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:
                    return None  # another process writes: the thread waits for it
                raise StoreUnavailable(f"SQLite: {exc}") from exc
            self._commits += 1
            return rows
        finally:
            self._lock.release()

    # -- the thread ------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            first = self._jobs.get()
            batch = [] if first is None else [first]
            ending = first is None
            while not ending and len(batch) < MAX_BATCH:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    ending = True
                else:
                    batch.append(job)
            if batch:
                with self._lock:
                    self._commit(batch)
                    self._settled += len(batch)
                    self._checkpoint()
                self._settle_soon(batch)
            if ending:
                self.db.close()
                stopped = self._stopped
                if stopped is not None:
                    _call_soon(stopped.get_loop(), self._ended, stopped)
                return

    def _settle_soon(self, batch: list[_Job]) -> None:
        """Hand a committed batch to the loops waiting for it, one wake-up each."""
        mine: list[_Job] = []
        others: dict[asyncio.AbstractEventLoop, list[_Job]] = {}
        for job in batch:
            if job.future is None:
                if job.error is not None:
                    log.warning("state store: a write nobody waited for failed: %s", job.error)
            elif job.future.get_loop() is self._loop:
                mine.append(job)
            else:
                others.setdefault(job.future.get_loop(), []).append(job)
        if mine:
            self._done.append(mine)  # before the wake-up: the loop takes what it finds
            os.eventfd_write(self._wake, 1)
        for loop, jobs in others.items():
            _call_soon(loop, _settle, jobs)

    # -- back on the loop ------------------------------------------------------------------

    def _woken(self) -> None:
        try:
            os.eventfd_read(self._wake)
        except BlockingIOError:  # what it said was taken by the call before
            pass
        while self._done:
            _settle(self._done.popleft())

    def _ended(self, stopped: asyncio.Future[None]) -> None:
        self._woken()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._wake)
        os.close(self._wake)
        if not stopped.done():
            stopped.set_result(None)

    def _commit(self, batch: list[_Job]) -> None:
        if self._durable:
            self.db.execute("PRAGMA synchronous=FULL")  # not inside a transaction
        try:
            self._begin()
            for job in batch:
                job.result = job.work(self.db)
            self.db.execute("COMMIT")
            self._commits += 1
        except Exception as exc:
            self._rollback(exc)
            if len(batch) > 1:  # whose it was: each again in a transaction of its own
                for job in batch:
                    self._commit([job])
                return
            batch[0].error = exc
        finally:
            if self._durable and not self.db.in_transaction:  # else the next begin fails
                self.db.execute("PRAGMA synchronous=NORMAL")

    def _begin(self) -> None:
        """``BEGIN IMMEDIATE``, tried again while another process holds the write lock (the
        connection has no busy timeout: the loop's writes must not wait for it).
        """
        deadline = time.monotonic() + BUSY_TIMEOUT
        delay = _BUSY_FIRST
        while True:
            try:
                self.db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
                if not busy or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, _BUSY_CAP)

    def _rollback(self, exc: Exception) -> None:
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite rolls back itself when it cannot go on
                log.warning("state store: rollback failed after %s", exc)

    def _checkpoint(self) -> None:
        if self._commits < CHECKPOINT_EVERY:
            return
        self._commits = 0
        try:
            self.db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # tried again after the next commits
            log.warning("state store: checkpoint failed: %s", exc)


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., object], *args: Any) -> None:
    try:
        loop.call_soon_threadsafe(fn, *args)
    except RuntimeError:  # that loop is closed: nobody waits any more
        pass


def _settle(jobs: list[_Job]) -> None:
    for job in jobs:
        future = job.future
        if future is None or future.done():  # its caller was cancelled
            continue
        if job.error is None:
            future.set_result(job.result)
        elif isinstance(job.error, sqlite3.OperationalError):  # locked, disk full, I/O
            future.set_exception(StoreUnavailable(f"SQLite: {job.error}"))
        else:
            future.set_exception(job.error)
