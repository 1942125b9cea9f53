"""One SQLite file (stdlib ``sqlite3``, WAL): the default store of a single gateway process.

One connection, used by a thread of the store's own with group commit (``commits``):
operations that arrive together share a transaction and its fsync; the journal's marks are
written on the event loop when that thread is idle. What must be on disk before what
(docs/reliability.md): an input and its claim before its platform is acknowledged
(durable); the journal's later marks only written, before what follows them, and on disk
with the next durable commit. The schema carries its version in ``PRAGMA user_version``;
``_MIGRATIONS`` brings an older file up to date.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .base import KEPT, Entry, Lease, StateStore, StoreUnavailable, decode, encode
from .commits import GroupCommit, Work
from .private import private_file

if TYPE_CHECKING:
    from ..settings import SqliteSynchronous

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
    # A journal entry's record is written once; what changes (``Entry.encoded_status``) here.
    ("ALTER TABLE journal ADD COLUMN status TEXT",),
    # An entry is found by its seq (the row id) and id: no index on id, no AUTOINCREMENT
    # counter, so an input writes two pages fewer. A seq may come again once every entry
    # above it is gone; the id with it tells the entries apart.
    (
        "CREATE TABLE journal_5 (seq INTEGER PRIMARY KEY, id TEXT NOT NULL,"
        " conversation TEXT NOT NULL, entry TEXT NOT NULL, status TEXT)",
        "INSERT INTO journal_5 SELECT seq, id, conversation, entry, status FROM journal",
        "DROP TABLE journal",
        "ALTER TABLE journal_5 RENAME TO journal",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)
_SET_STATUS = "UPDATE journal SET status = ? WHERE seq = ? AND id = ?"
_DROP = "DELETE FROM journal WHERE seq = ? AND id = ?"
_UNLESS_LIVE = " WHERE claims.expires <= ?"  # a claim is taken again once it expired
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
        self._writer: GroupCommit | None = None
        self._claims_written = 0
        self._keys_written = 0

    async def open(self) -> None:
        if self._db is None:
            self._db = await asyncio.to_thread(self._connect)
            self._writer = GroupCommit(self._db, self.synchronous)
            self._writer.start()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # new folders only
        private_file(self.path)
        # The busy timeout comes with the connection, before the first statement: another
        # process opening, migrating or writing the same file is waited for, not an error.
        db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=_BUSY_TIMEOUT
        )
        try:
            _wal(db)
            # FULL (the default): an input acknowledged to its platform is on disk, also
            # across a power cut. NORMAL: in WAL mode, across a crash of the process, not of
            # the machine. GroupCommit commits at that level.
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
        writer, self._writer, self._db = self._writer, None, None
        if writer is not None:
            await writer.stop()  # what was submitted is committed first

    @property
    def writer(self) -> GroupCommit:
        if self._writer is None:
            raise StoreUnavailable("the SQLite store is not open")
        return self._writer

    async def _call(self, work: Work[T]) -> T:
        """``work(db)`` in a transaction; returns once it is committed (durable)."""
        return await self.writer.submit(work)

    async def ping(self) -> None:
        await self._call(lambda db: db.execute("SELECT 1").fetchone())

    # -- key-value -------------------------------------------------------------------------

    async def get(self, key: str) -> Any | None:
        # What it writes (when the key was last used) need not be durable.
        rows = await self.writer.write(
            "UPDATE state SET used = ? WHERE key = ? RETURNING value", (time.time(), key)
        )
        return json.loads(rows[0][0]) if rows else None

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
            # The KEPT keys (the access records) are neither counted nor removed.
            db.execute(
                "DELETE FROM state WHERE key IN (SELECT key FROM state WHERE key NOT LIKE ?1 "
                "ORDER BY used LIMIT max(0, (SELECT count(*) FROM state "
                "WHERE key NOT LIKE ?1) - ?2))",
                (KEPT + "%", self.max_keys),
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
        if self._put_claim(db, key, value, ttl, now, _UNLESS_LIVE, (now,)):
            return None
        held: str | bytes = db.execute(  # bytes: a big value, encoded off the loop (Encoded)
            "SELECT value FROM claims WHERE key = ?", (key,)
        ).fetchone()[0]
        return held

    def _put_claim(
        self,
        db: sqlite3.Connection,
        key: str,
        value: str | bytes,
        ttl: float,
        now: float,
        unless: str = "",
        also: tuple[float, ...] = (),
    ) -> bool:
        """Write the claim (``unless`` a condition on the one held): whether it was."""
        written = db.execute(
            "INSERT INTO claims (key, value, expires) VALUES (?, ?, ?) ON CONFLICT(key) "
            "DO UPDATE SET value = excluded.value, expires = excluded.expires" + unless,
            (key, value, now + ttl, *also),
        ).rowcount
        if not written:
            return False
        self._claims_written += 1
        if self._claims_written % _PRUNE_EVERY == 0:
            db.execute("DELETE FROM claims WHERE expires <= ?", (now,))
            db.execute(
                "DELETE FROM claims WHERE key IN (SELECT key FROM claims ORDER BY expires "
                "LIMIT max(0, (SELECT count(*) FROM claims) - ?))",
                (self.max_claims,),
            )
        return True

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
        record = await entry.encoded()  # its seq is the column's: given by the insert

        def work(db: sqlite3.Connection) -> int | None:
            if claim is not None and self._claim(db, claim, encoded, ttl) is not None:
                return None
            cursor = db.execute(
                "INSERT INTO journal (id, conversation, entry) VALUES (?, ?, ?)",
                (entry.id, entry.conversation, record),
            )
            return int(cursor.lastrowid or 0)

        seq = await self._call(work)  # durable: the platform is acknowledged next
        if seq is None:
            return None
        entry.seq = seq  # as written: not decoded back from what was just encoded
        return entry

    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        status = (await entry.encoded_status(), entry.seq, entry.id)
        if fence is None:
            # Written before the caller goes on (the turn, the delivery): a crash of the
            # process cannot lose it; a power cut may, until the next durable commit.
            await self.writer.write(_SET_STATUS, status)
            return True

        def work(db: sqlite3.Connection) -> bool:
            if not self._current(db, fence):
                return False
            db.execute(_SET_STATUS, status)
            return True

        return await self._call(work)

    async def finish(self, entry: Entry) -> None:
        # Nobody waits: a crash before it is written sends the reply again (at least once).
        self.writer.write_soon(_DROP, (entry.seq, entry.id))

    async def pending(self, conversation: str | None = None) -> list[Entry]:
        def work(db: sqlite3.Connection) -> list[tuple[int, str | bytes, str | bytes | None]]:
            if conversation is None:
                return db.execute("SELECT seq, entry, status FROM journal ORDER BY seq").fetchall()
            return db.execute(
                "SELECT seq, entry, status FROM journal WHERE conversation = ? ORDER BY seq",
                (conversation,),
            ).fetchall()

        entries = []
        for seq, record, status in await self._call(work):
            entry = Entry.decode(record, status)
            entry.seq = seq
            entries.append(entry)
        return entries

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
