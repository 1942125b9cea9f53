"""The in-process store: state lasts as long as the process (tests, or explicitly chosen)."""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from typing import Any

from .base import KEPT, Entry, Lease, StateStore, decode, encode


class MemoryStore(StateStore):
    """Holds at most ``max_items`` keys and ``max_claims`` claims, forgetting the least recently
    used (keys) and the oldest (claims) beyond that; the ``KEPT`` keys are not counted.
    """

    kind = "memory"

    def __init__(self, max_items: int = 10_000, max_claims: int = 100_000) -> None:
        if max_items < 1 or max_claims < 1:
            raise ValueError("max_items and max_claims must be at least 1")
        self.max_items = max_items
        self.max_claims = max_claims
        self._items: OrderedDict[str, str | bytes] = OrderedDict()
        self._kept: dict[str, str | bytes] = {}  # KEPT keys: never forgotten for the bound
        # key -> (expiry, value)
        self._claims: OrderedDict[str, tuple[float, str | bytes]] = OrderedDict()
        # id -> the entry as appended and its status since (None: none yet), encoded
        self._journal: dict[str, tuple[str | bytes, str | bytes | None]] = {}
        self._seq = 0
        self._leases: dict[str, tuple[str, int, float]] = {}  # name -> (owner, token, expiry)
        self._token = 0  # one counter for every name: still larger for each new holder

    async def get(self, key: str) -> Any | None:
        raw = self._items.get(key)
        if raw is None:
            kept = self._kept.get(key)
            return None if kept is None else json.loads(kept)
        self._items.move_to_end(key)
        return json.loads(raw)

    async def set(self, key: str, value: Any) -> None:
        if key.startswith(KEPT):
            self._kept[key] = encode(value)
            return
        self._items[key] = encode(value)
        self._items.move_to_end(key)
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)

    async def delete(self, key: str) -> bool:
        return (self._items.pop(key, None) or self._kept.pop(key, None)) is not None

    # -- claims ----------------------------------------------------------------------------

    def _live_claim(self, key: str, now: float) -> str | bytes | None:
        item = self._claims.get(key)
        if item is None:
            return None
        if item[0] <= now:
            del self._claims[key]
            return None
        return item[1]

    def _put_claim(self, key: str, value: Any, ttl: float, now: float) -> None:
        self._claims.pop(key, None)
        self._claims[key] = (now + ttl, encode(value))
        while self._claims:  # oldest first: expired ones, and any beyond the bound
            first, (expiry, _) = next(iter(self._claims.items()))
            if expiry > now and len(self._claims) <= self.max_claims:
                break
            del self._claims[first]

    async def claim(self, key: str, value: Any, ttl: float) -> tuple[bool, Any | None]:
        now = time.time()
        held = self._live_claim(key, now)
        if held is not None:
            return False, json.loads(held)
        self._put_claim(key, value, ttl, now)
        return True, None

    async def recall(self, key: str) -> Any | None:
        held = self._live_claim(key, time.time())
        return None if held is None else await decode(held)

    async def remember(self, key: str, value: Any, ttl: float) -> None:
        self._put_claim(key, value, ttl, time.time())

    async def forget(self, key: str) -> None:
        self._claims.pop(key, None)

    # -- the journal -----------------------------------------------------------------------

    async def append(
        self, entry: Entry, claim: str | None, ttl: float, value: Any = 1
    ) -> Entry | None:
        if claim is not None:
            claimed, _ = await self.claim(claim, value, ttl)
            if not claimed:
                return None
        self._seq += 1
        entry.seq = self._seq
        self._journal[entry.id] = (entry.encode(), None)
        return entry  # as written, as SQLite and Redis give it: not decoded back

    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        if fence is not None and not self._current(fence):
            return False
        kept = self._journal.get(entry.id)
        if kept is not None:  # the record as appended, and what changed since (as SQLite)
            self._journal[entry.id] = (kept[0], entry.status())
        return True

    async def finish(self, entry: Entry) -> None:
        self._journal.pop(entry.id, None)

    async def pending(self, conversation: str | None = None) -> list[Entry]:
        entries = [Entry.decode(raw, status) for raw, status in self._journal.values()]
        if conversation is not None:
            entries = [e for e in entries if e.conversation == conversation]
        return sorted(entries, key=lambda e: e.seq)

    # -- leases ----------------------------------------------------------------------------

    def _current(self, lease: Lease) -> bool:
        held = self._leases.get(lease.name)
        return (
            held is not None
            and held[2] > time.time()
            and (held[0], held[1]) == (lease.owner, lease.token)
        )

    async def acquire(self, name: str, owner: str, ttl: float) -> Lease | None:
        now = time.time()
        held = self._leases.get(name)
        if held is not None and held[2] > now:
            if held[0] != owner:
                return None
            token = held[1]
        else:
            self._token += 1
            token = self._token
        self._leases[name] = (owner, token, now + ttl)
        return Lease(name, owner, token)

    async def renew(self, lease: Lease, ttl: float) -> bool:
        if not self._current(lease):
            return False
        self._leases[lease.name] = (lease.owner, lease.token, time.time() + ttl)
        return True

    async def release(self, lease: Lease) -> None:
        if self._current(lease):
            del self._leases[lease.name]

    async def holder(self, name: str) -> str | None:
        held = self._leases.get(name)
        return held[0] if held is not None and held[2] > time.time() else None
