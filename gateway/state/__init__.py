"""Durable state behind one interface: key-value, claims, the inbound journal and leases.

``memory`` (tests, or explicitly chosen), ``sqlite`` (the default: one process, one file) and
``redis`` (several replicas). See ``base.StateStore`` for what each holds.
"""

from __future__ import annotations

from pathlib import Path
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
    "state_file",
    "state_file_notice",
    "store_problem",
]

STATE_FILE = "state.sqlite3"  # in data_dir
# Where releases before data_dir kept the state: the working folder.
OLD_STATE_FILE = Path("slashgate-state.sqlite3")


def state_file(settings: CoreSettings) -> Path:
    """The SQLite store's file: ``state_path``, else ``data_dir/state.sqlite3``; but the working
    folder's ``slashgate-state.sqlite3`` (from before ``data_dir``) while it is there and the
    new file is not, so that an upgrade keeps its state (``state_file_notice`` says so).
    """
    if settings.state_path is not None:
        return settings.state_path
    new = settings.data_dir / STATE_FILE
    return OLD_STATE_FILE if OLD_STATE_FILE.is_file() and not new.exists() else new


def state_file_notice(settings: CoreSettings) -> str | None:
    """What to do when the state is still in the working folder's old file (else None)."""
    chosen = settings.state_path is not None  # a state_path is no leftover
    if settings.store != "sqlite" or chosen or state_file(settings) != OLD_STATE_FILE:
        return None
    new = settings.data_dir / STATE_FILE
    return (
        f"{OLD_STATE_FILE} in the working folder holds the state (releases before data_dir "
        f"kept it there); it is used while {new} does not exist. To move it: stop the gateway "
        f"(a clean stop leaves one file), then mkdir -p -m 700 {settings.data_dir} && mv "
        f'{OLD_STATE_FILE} {new}. To keep it there: state_path = "{OLD_STATE_FILE}"'
    )


def open_store(settings: CoreSettings) -> StateStore:
    """The store the settings choose (not yet opened)."""
    if settings.store == "sqlite":
        return SqliteStore(
            state_file(settings),
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
