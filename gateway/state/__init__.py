"""Durable state behind one interface: key-value, claims, the inbound journal and leases.

``memory`` (tests, or explicitly chosen), ``sqlite`` (the default: one process, one file) and
``redis`` (several replicas). See ``base.StateStore`` for what each holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Encoded, Entry, EntryState, Lease, StateStore, StoreUnavailable
from .memory import MemoryStore
from .sqlite import SqliteStore
from .timed import TimedStore

if TYPE_CHECKING:
    from ..settings import CoreSettings

__all__ = [
    "Encoded",
    "Entry",
    "EntryState",
    "Lease",
    "MemoryStore",
    "SqliteStore",
    "StateStore",
    "StoreUnavailable",
    "TimedStore",
    "open_store",
    "store_problem",
]


def open_store(settings: CoreSettings) -> StateStore:
    """The store the settings choose (not yet opened)."""
    if settings.store == "sqlite":
        return SqliteStore(
            settings.state_path,
            settings.dedupe_size,
            settings.sqlite_synchronous,
            settings.sqlite_state_size,
        )
    if settings.store == "redis":
        from .redis import RedisStore  # redis-py is imported only where it is used

        assert settings.redis_url is not None  # CoreSettings requires it for this store
        return RedisStore(
            settings.redis_url.get_secret_value(), settings.redis_prefix, settings.dedupe_size
        )
    return MemoryStore(settings.memory_store_size, settings.dedupe_size)


async def store_problem(store: StateStore) -> str | None:
    """None when the store answers now; else what went wrong (``/readyz``)."""
    try:
        await store.ping()
    except Exception as exc:
        return f"the state store does not answer: {type(exc).__name__}: {exc}"
    return None
