"""One SQLite file (stdlib ``sqlite3``, WAL): the default store of a single gateway process.

Blocking calls run in a worker thread, one at a time on one connection. The schema carries
its version in ``PRAGMA user_version``; ``_MIGRATIONS`` brings an older file up to date.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .base import Entry, Lease, StateStore, StoreUnavailable, decode, encode

if TYPE_CHECKING:
    from ..config import SqliteSynchronous

T = TypeVar("T")

# Each step brings the schema from version i to i + 1; a new step goes at the end.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    ("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",),
    (
        "CREATE TABLE claims (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL NOT NULL)",
        "CREATE INDEX claims_expires ON claims (expires)",
        "CREATE TABLE journal (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
        " conversation TEXT NOT NULL, entry TEXT NOT NULL)",
        "CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT NOT NULL,"
        " token INTEGER NOT NULL, expires REAL NOT NULL)",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    ),
    # When each key was last read or written: beyond ``max_keys`` the least recently used go.
    (
        "ALTER TABLE state ADD COLUMN used REAL NOT NULL DEFAULT 0",
        "CREATE INDEX state_used ON state (used)",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)
_BUSY_TIMEOUT = 5.0  # seconds a statement waits for another connection's lock
_WAL_RETRY = 0.01  # seconds between two tries of the switch to WAL
_PRUNE_EVERY = 256  # claims (or keys) written between two sweeps of expired and surplus ones


def _wal(db: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while busy: while another connection switches
    the same new file, SQLite answers busy at once, without waiting the busy timeout.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(_WAL_RETRY)


class SqliteStore(StateStore):
    kind = "sqlite"

    def __init__(
        self,
        path: str | Path,
        max_claims: int = 100_000,
        synchronous: SqliteSynchronous = "full",
        max_keys: int = 100_000,
    ) -> None:
        self.path = Path(path)
        self.max_claims = max_claims
        self.max_keys = max_keys
        self.synchronous = synchronous
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used from worker threads in turn
        self._claims_written = 0
        self._keys_written = 0

    async def open(self) -> None:
        if self._db is None:
            self._db = await asyncio.to_thread(self._connect)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # The busy timeout comes with the connection, before the first statement: another
        # process opening, migrating or writing the same file is waited for, not an error.
        db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=_BUSY_TIMEOUT
        )
        try:
            _wal(db)
            # FULL (the default): an input acknowledged to its platform is on disk, also
            # across a power cut. NORMAL: in WAL mode, across a crash of the process, not of
            # the machine.
            db.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            self._migrate(db)
        except sqlite3.OperationalError as exc:  # locked past the timeout, a bad file, I/O
            db.close()
            raise StoreUnavailable(f"SQLite {self.path}: {exc}") from exc
        except BaseException:
            db.close()
            raise
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        """Bring the schema up to date. The version is read inside the write transaction that
        migrates: of several processes opening one new file at once, the first creates the
        schema and the others, waiting for its lock, then find it current (issue 21).
        """
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreUnavailable(
                    f"{self.path} has schema version {version}, newer than this gateway's "
                    f"{SCHEMA_VERSION}: upgrade the gateway or use another state_path"
                )
            for step in range(version, SCHEMA_VERSION):
                for statement in _MIGRATIONS[step]:
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await asyncio.to_thread(self._locked, db.close)

    def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        with self._lock:
            return fn(*args)

    async def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection in a worker thread, as one transaction."""
        if self._db is None:
            raise StoreUnavailable("the SQLite store is not open")
        db = self._db

        def transaction() -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        try:
            return await asyncio.to_thread(self._locked, transaction)
        except sqlite3.OperationalError as exc:  # locked past busy_timeout, disk full, I/O
            raise StoreUnavailable(f"SQLite: {exc}") from exc

    async def ping(self) -> None:
        await self._call(lambda db: db.execute("SELECT 1").fetchone())

    # -- key-value -------------------------------------------------------------------------

    async def get(self, key: str) -> Any | None:
        row = await self._call(
            lambda db: db.execute(
                "UPDATE state SET used = ? WHERE key = ? RETURNING value", (time.time(), key)
            ).fetchone()
        )
        return None if row is None else json.loads(row[0])

    async def set(self, key: str, value: Any) -> None:
        encoded = encode(value)
        await self._call(lambda db: self._set(db, key, encoded))

    def _set(self, db: sqlite3.Connection, key: str, value: str | bytes) -> None:
        db.execute(
            "INSERT INTO state (key, value, used) VALUES (?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value, used = excluded.used",
            (key, value, time.time()),
        )
        self._keys_written += 1
        if self._keys_written % _PRUNE_EVERY == 0:  # a key per conversation: never unbounded
            db.execute(
                "DELETE FROM state WHERE key IN (SELECT key FROM state ORDER BY used "
                "LIMIT max(0, (SELECT count(*) FROM state) - ?))",
                (self.max_keys,),
            )

    async def delete(self, key: str) -> bool:
        count = await self._call(
            lambda db: db.execute("DELETE FROM state WHERE key = ?", (key,)).rowcount
        )
        return count > 0

    # -- claims ----------------------------------------------------------------------------

    def _claim(
        self, db: sqlite3.Connection, key: str, value: str | bytes, ttl: float
    ) -> str | bytes | None:
        now = time.time()
        row = db.execute(
            "SELECT value FROM claims WHERE key = ? AND expires > ?", (key, now)
        ).fetchone()
        if row is not None:
            held: str | bytes = row[0]  # bytes: a big value, encoded off the loop (Encoded)
            return held
        self._put_claim(db, key, value, ttl, now)
        return None

    def _put_claim(
        self, db: sqlite3.Connection, key: str, value: str | bytes, ttl: float, now: float
    ) -> None:
        db.execute(
            "INSERT INTO claims (key, value, expires) VALUES (?, ?, ?) ON CONFLICT(key) "
            "DO UPDATE SET value = excluded.value, expires = excluded.expires",
            (key, value, now + ttl),
        )
        self._claims_written += 1
        if self._claims_written % _PRUNE_EVERY == 0:
            db.execute("DELETE FROM claims WHERE expires <= ?", (now,))
            db.execute(
                "DELETE FROM claims WHERE key IN (SELECT key FROM claims ORDER BY expires "
                "LIMIT max(0, (SELECT count(*) FROM claims) - ?))",
                (self.max_claims,),
            )

    async def claim(self, key: str, value: Any, ttl: float) -> tuple[bool, Any | None]:
        encoded = encode(value)
        held = await self._call(lambda db: self._claim(db, key, encoded, ttl))
        return (True, None) if held is None else (False, json.loads(held))

    async def recall(self, key: str) -> Any | None:
        row = await self._call(
            lambda db: db.execute(
                "SELECT value FROM claims WHERE key = ? AND expires > ?", (key, time.time())
            ).fetchone()
        )
        return None if row is None else await decode(row[0])

    async def remember(self, key: str, value: Any, ttl: float) -> None:
        encoded = encode(value)
        await self._call(lambda db: self._put_claim(db, key, encoded, ttl, time.time()))

    async def forget(self, key: str) -> None:
        await self._call(lambda db: db.execute("DELETE FROM claims WHERE key = ?", (key,)))

    # -- the journal -----------------------------------------------------------------------

    async def append(
        self, entry: Entry, claim: str | None, ttl: float, value: Any = 1
    ) -> Entry | None:
        encoded = encode(value)

        def work(db: sqlite3.Connection) -> Entry | None:
            if claim is not None and self._claim(db, claim, encoded, ttl) is not None:
                return None
            cursor = db.execute(
                "INSERT INTO journal (id, conversation, entry) VALUES (?, ?, '')",
                (entry.id, entry.conversation),
            )
            entry.seq = int(cursor.lastrowid or 0)
            text = entry.encode()  # here, in the worker thread: a big entry's in slices
            db.execute("UPDATE journal SET entry = ? WHERE seq = ?", (text, entry.seq))
            return Entry.decode(text)

        return await self._call(work)

    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        encoded = await entry.encoded()

        def work(db: sqlite3.Connection) -> bool:
            if fence is not None and not self._current(db, fence):
                return False
            db.execute("UPDATE journal SET entry = ? WHERE id = ?", (encoded, entry.id))
            return True

        return await self._call(work)

    async def finish(self, entry: Entry) -> None:
        await self._call(lambda db: db.execute("DELETE FROM journal WHERE id = ?", (entry.id,)))

    async def pending(self, conversation: str | None = None) -> list[Entry]:
        def work(db: sqlite3.Connection) -> list[tuple[str]]:
            if conversation is None:
                return db.execute("SELECT entry FROM journal ORDER BY seq").fetchall()
            return db.execute(
                "SELECT entry FROM journal WHERE conversation = ? ORDER BY seq", (conversation,)
            ).fetchall()

        return [Entry.decode(row[0]) for row in await self._call(work)]

    # -- leases ----------------------------------------------------------------------------

    @staticmethod
    def _current(db: sqlite3.Connection, lease: Lease) -> bool:
        row = db.execute(
            "SELECT 1 FROM leases WHERE name = ? AND owner = ? AND token = ? AND expires > ?",
            (lease.name, lease.owner, lease.token, time.time()),
        ).fetchone()
        return row is not None

    async def acquire(self, name: str, owner: str, ttl: float) -> Lease | None:
        def work(db: sqlite3.Connection) -> Lease | None:
            now = time.time()
            row = db.execute(
                "SELECT owner, token FROM leases WHERE name = ? AND expires > ?", (name, now)
            ).fetchone()
            if row is not None and row[0] != owner:
                return None
            if row is not None:
                token = int(row[1])
            else:
                token = int(
                    db.execute(
                        "INSERT INTO counters (name, value) VALUES ('lease', 1) ON CONFLICT(name)"
                        " DO UPDATE SET value = value + 1 RETURNING value"
                    ).fetchone()[0]
                )
            db.execute(
                "INSERT INTO leases (name, owner, token, expires) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET owner = excluded.owner, "
                "token = excluded.token, expires = excluded.expires",
                (name, owner, token, now + ttl),
            )
            return Lease(name, owner, token)

        return await self._call(work)

    async def renew(self, lease: Lease, ttl: float) -> bool:
        def work(db: sqlite3.Connection) -> bool:
            if not self._current(db, lease):
                return False
            db.execute(
                "UPDATE leases SET expires = ? WHERE name = ?", (time.time() + ttl, lease.name)
            )
            return True

        return await self._call(work)

    async def release(self, lease: Lease) -> None:
        await self._call(
            lambda db: db.execute(
                "DELETE FROM leases WHERE name = ? AND owner = ? AND token = ?",
                (lease.name, lease.owner, lease.token),
            )
        )

    async def holder(self, name: str) -> str | None:
        row = await self._call(
            lambda db: db.execute(
                "SELECT owner FROM leases WHERE name = ? AND expires > ?", (name, time.time())
            ).fetchone()
        )
        return None if row is None else str(row[0])
