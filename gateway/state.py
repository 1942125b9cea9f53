"""Durable state behind one small interface: namespaced string keys, JSON values.

Holds what must survive a restart of the gateway (runtime stream offsets today; sessions,
queues and dedupe keys later). Keys are namespaced by their owner, ``"<area>:<name>"``,
so that one store serves every part of the gateway. Values are anything ``json`` can
encode; every store hands back a fresh copy, never a shared object.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Settings


class StateStore(ABC):
    """Async key-value store. ``open`` before use, ``close`` when done (both idempotent)."""

    async def open(self) -> None:
        """Acquire resources (files, connections)."""

    async def close(self) -> None:
        """Release them; writes already awaited are durable."""

    @abstractmethod
    async def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None."""

    @abstractmethod
    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-encodable) under ``key``, replacing any previous value."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""

    @abstractmethod
    async def scan(self, prefix: str) -> dict[str, Any]:
        """Every key starting with ``prefix`` and its value."""


class MemoryStore(StateStore):
    """Process-local store: state lasts as long as the process (the default for tests)."""

    def __init__(self) -> None:
        self._items: dict[str, str] = {}

    async def get(self, key: str) -> Any | None:
        raw = self._items.get(key)
        return None if raw is None else json.loads(raw)

    async def set(self, key: str, value: Any) -> None:
        # Stored encoded, as SQLite does: same JSON rules, and no aliasing of mutable values.
        self._items[key] = json.dumps(value, ensure_ascii=False)

    async def delete(self, key: str) -> bool:
        return self._items.pop(key, None) is not None

    async def scan(self, prefix: str) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._items.items() if k.startswith(prefix)}


_SCHEMA = "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


class SqliteStore(StateStore):
    """One SQLite file (stdlib ``sqlite3``); blocking calls run in a worker thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used from worker threads in turn

    async def open(self) -> None:
        if self._db is None:
            self._db = await asyncio.to_thread(self._connect)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        return db

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            await asyncio.to_thread(self._locked, db.close)

    def _locked(self, fn: Any, *args: Any) -> Any:
        with self._lock:
            return fn(*args)

    async def _run(self, sql: str, params: tuple[Any, ...]) -> tuple[list[tuple[Any, ...]], int]:
        """(rows, rowcount) of one statement; autocommit, so a write is durable once awaited."""
        if self._db is None:
            raise RuntimeError("the SQLite store is not open")
        db = self._db

        def execute() -> tuple[list[tuple[Any, ...]], int]:
            cursor = db.execute(sql, params)
            return cursor.fetchall(), cursor.rowcount

        result: tuple[list[tuple[Any, ...]], int] = await asyncio.to_thread(self._locked, execute)
        return result

    async def get(self, key: str) -> Any | None:
        rows, _ = await self._run("SELECT value FROM state WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    async def set(self, key: str, value: Any) -> None:
        encoded = json.dumps(value, ensure_ascii=False)
        await self._run(
            "INSERT INTO state (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, encoded),
        )

    async def delete(self, key: str) -> bool:
        _, count = await self._run("DELETE FROM state WHERE key = ?", (key,))
        return count > 0

    async def scan(self, prefix: str) -> dict[str, Any]:
        # Range scan instead of LIKE: prefixes may hold % and _ literally.
        rows, _ = await self._run(
            "SELECT key, value FROM state WHERE key >= ? AND key < ? ORDER BY key",
            (prefix, prefix + "\U0010ffff"),
        )
        return {k: json.loads(v) for k, v in rows if k.startswith(prefix)}


def open_store(settings: Settings) -> StateStore:
    """The store the settings choose (not yet opened)."""
    if settings.store == "sqlite":
        return SqliteStore(settings.state_path)
    return MemoryStore()
