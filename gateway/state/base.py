"""The state store's interface: what must survive a restart of the gateway, and what several
gateway replicas share.

Four kinds of state, each bounded:
- key-value: namespaced string keys (``"<area>:<name>"``), JSON values (Electric's stream
  positions, runtime session ids, dynamic commands, the access records: ``KEPT``);
- claims: keys remembered for a while (``ttl`` seconds, at most ``max_claims`` of them), for
  deduplication of platform deliveries and Idempotency-Key answers;
- the inbound journal: every accepted input until its reply is delivered, in arrival order;
- leases: a name held by one owner until it lets go or the lease expires, with a fencing
  token that grows with each new holder.
Shared stores also carry messages between the replicas listening at the time (a cancel asked
of the replica running a turn).
Every store hands back fresh copies of values, never a shared object.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal

from .. import jsonslices, offload

if TYPE_CHECKING:
    from ..arrivals import Place

EntryState = Literal["received", "running", "answered", "done"]  # "done": finished, gone
# Keys under this prefix are the operator's decisions (who may talk, gateway/access), one per
# chat channel: the bounds on the key-value space (memory_store_size, sqlite_state_size) never
# evict them, or an approval would go the way of a forgotten conversation.
KEPT = "access:"


class StoreUnavailable(Exception):
    """The store did not answer: nothing was written, the platform must deliver again."""


@dataclass(slots=True)
class Entry:
    """One accepted input in the journal.

    ``body`` is the channel's own record of the input (enough to rebuild the message and
    where its reply goes); ``reply`` is the reply once made, kept until it is delivered.
    """

    id: str
    conversation: str  # the core's key, "<channel>:<conversation>"
    channel: str
    body: dict[str, Any]
    state: EntryState = "received"
    reply: dict[str, Any] | None = None
    owner: str = ""  # the replica that accepted or runs it
    seq: int = 0  # arrival order, given by the store
    command: str | None = None  # the slash command it runs, once known (for the restart notice)
    created: float = 0.0
    _body_chars: int = field(default=-1, init=False, repr=False, compare=False)
    # Its place in its conversation's arrival order (gateway/arrivals.py), while it is on
    # its way to the run queue; never stored.
    place: Place | None = field(default=None, init=False, repr=False, compare=False)

    def encode(self) -> str | bytes:
        return self._encode(self.size())

    def _encode(self, size: int) -> str | bytes:
        # Not asdict(): it deep-copies every field, three times per input on the hot path;
        # the fields are JSON values already, so the same text comes out.
        fields = dict(zip(_ENTRY_FIELDS, _entry_values(self), strict=True))
        if size < offload.THRESHOLD:
            return "".join(_compact(fields, 0))
        return jsonslices.dump_bytes(fields, ensure_ascii=False, separators=_COMPACT)

    def size(self) -> int:
        """Characters of text the entry holds (its input's record, its reply). The record is
        counted once: it is written a few times per input and never changes.
        """
        if self._body_chars < 0:
            self._body_chars = text_size(self.body)
        reply = self.reply
        return self._body_chars if reply is None else self._body_chars + text_size(reply)

    async def encoded(self) -> str | bytes:
        """``encode()``; a big entry's (a 1 MiB input, its reply) in a thread (issue 10)."""
        size = self.size()
        return await offload.off_loop(size, self._encode, size)

    def status(self) -> str | bytes:
        """What changes as the entry moves on (state, reply, owner, command), encoded."""
        return self._status(0 if self.reply is None else text_size(self.reply))

    async def encoded_status(self) -> str | bytes:
        """What changes as the entry moves on (state, reply, owner, command), encoded; a big
        reply's in a thread. A store that keeps it beside the record written at ``append``
        never encodes that record again.
        """
        size = 0 if self.reply is None else text_size(self.reply)
        return await offload.off_loop(size, self._status, size)

    def _status(self, size: int) -> str | bytes:
        fields = dict(zip(_STATUS_FIELDS, _status_values(self), strict=True))
        if size < offload.THRESHOLD:
            return "".join(_compact(fields, 0))
        return jsonslices.dump_bytes(fields, ensure_ascii=False, separators=_COMPACT)

    @classmethod
    def decode(cls, raw: str | bytes, status: str | bytes | None = None) -> Entry:
        """The entry ``encode`` wrote, with the ``status`` written since, if any."""
        fields = _loads(raw)
        if status is not None:
            fields.update(_loads(status))
        return cls(**fields)

    @classmethod
    async def decoded(cls, raw: str | bytes) -> Entry:
        """``decode(raw)``; a big entry's in a thread."""
        return cls(**await decode(raw))


_ENTRY_FIELDS = tuple(f.name for f in dataclass_fields(Entry) if f.init)
_STATUS_FIELDS = ("state", "reply", "owner", "command")
_entry_values = attrgetter(*_ENTRY_FIELDS)
_status_values = attrgetter(*_STATUS_FIELDS)
_COMPACT = (",", ":")
# Joined here: an entry is encoded three times per input, each a call of jsonslices' less.
_compact = jsonslices.chunker(ensure_ascii=False, separators=_COMPACT)


def text_size(value: Any) -> int:
    """Characters of the strings in ``value`` (a JSON value): what makes one big."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(map(text_size, value.values()))
    if isinstance(value, list | tuple):
        return sum(map(text_size, value))
    return 0


@dataclass(frozen=True, slots=True)
class Lease:
    name: str
    owner: str
    token: int  # the fencing token: larger for each new holder of the name


class StateStore(ABC):
    """``open`` before use, ``close`` when done (both idempotent). ``shared`` stores serve
    several gateway processes at once (leases then matter); the others serve one process.
    """

    shared = False
    kind = "memory"

    async def open(self) -> None:
        """Acquire resources (files, connections)."""

    async def close(self) -> None:
        """Release them; writes already awaited are durable."""

    async def ping(self) -> None:
        """Raise StoreUnavailable when the store does not answer."""

    # -- key-value -------------------------------------------------------------------------

    @abstractmethod
    async def get(self, key: str) -> Any | None:
        """The value stored under ``key``, or None."""

    @abstractmethod
    async def set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-encodable) under ``key``, replacing any previous value."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove ``key``; True when it existed."""

    # -- claims ----------------------------------------------------------------------------

    @abstractmethod
    async def claim(self, key: str, value: Any, ttl: float) -> tuple[bool, Any | None]:
        """Remember ``key`` with ``value`` for ``ttl`` seconds unless it is remembered already:
        (True, None) when this call claimed it, else (False, the value it holds).
        """

    @abstractmethod
    async def recall(self, key: str) -> Any | None:
        """The value of a live claim, or None."""

    @abstractmethod
    async def remember(self, key: str, value: Any, ttl: float) -> None:
        """Set the value of a claim (claiming it if need be) for ``ttl`` seconds from now."""

    @abstractmethod
    async def forget(self, key: str) -> None:
        """Drop a claim: the key may be claimed again."""

    # -- the journal -----------------------------------------------------------------------

    @abstractmethod
    async def append(
        self, entry: Entry, claim: str | None, ttl: float, value: Any = 1
    ) -> Entry | None:
        """Journal ``entry`` (its ``seq`` assigned), claiming ``claim`` (with ``value``) in the
        same step; None, and nothing written, when ``claim`` was claimed already.
        """

    @abstractmethod
    async def update(self, entry: Entry, fence: Lease | None = None) -> bool:
        """Write the entry's state, reply, owner and command; with ``fence``, only while that
        lease is still the current one (False, nothing written, otherwise).
        """

    @abstractmethod
    async def finish(self, entry: Entry) -> None:
        """Drop a delivered entry from the journal."""

    @abstractmethod
    async def pending(self, conversation: str | None = None) -> list[Entry]:
        """The journal, oldest first (one conversation's, or all of it)."""

    # -- leases ----------------------------------------------------------------------------

    @abstractmethod
    async def acquire(self, name: str, owner: str, ttl: float) -> Lease | None:
        """Hold ``name`` for ``ttl`` seconds, or None while someone else holds it. The owner
        that holds it already gets it renewed (same token).
        """

    async def take_turn(
        self,
        name: str,
        owner: str,
        ttl: float,
        conversation: str,
        seq: int | None,
        running: Entry | None = None,
    ) -> Lease | None:
        """``acquire(name, owner, ttl)``, only while no input of ``conversation`` older than
        ``seq`` is in the journal (``seq`` None: whatever is): None otherwise, nothing held.
        With the lease, ``running``'s status is written as ``update(running, lease)`` does (the
        turn's "running" mark). A shared store does it all in one step.
        """
        lease = await self.acquire(name, owner, ttl)
        if lease is None:
            return None
        if seq is not None and any(e.seq < seq for e in await self.pending(conversation)):
            await self.release(lease)
            return None
        if running is not None:
            await self.update(running, lease)
        return lease

    @abstractmethod
    async def renew(self, lease: Lease, ttl: float) -> bool:
        """Extend a lease; False when it expired and is lost (someone else may hold it)."""

    @abstractmethod
    async def release(self, lease: Lease) -> None:
        """Let go of a lease that is still ours."""

    async def release_finished(self, lease: Lease, entry: Entry) -> None:
        """``release(lease)``, then ``finish(entry)``: a delivered turn's end. A shared store
        does both in one step, so the next turn of the conversation finds both at once.
        """
        await self.release(lease)
        await self.finish(entry)

    @abstractmethod
    async def holder(self, name: str) -> str | None:
        """The owner holding ``name`` now, or None."""

    # -- messages between replicas (shared stores only) ---------------------------------

    async def publish(self, topic: str, message: str) -> None:
        """Send ``message`` to every replica listening on ``topic`` now (none keep it)."""
        raise NotImplementedError(f"the {self.kind} store serves one process")

    def listen(self, topic: str) -> AsyncIterator[str]:
        """The messages published on ``topic`` from now on; StoreUnavailable ends it."""
        raise NotImplementedError(f"the {self.kind} store serves one process")


class Encoded(bytes):
    """A value encoded already, as ``encode`` encodes it, in UTF-8: a big one is encoded off
    the event loop by its owner (``jsonslices``), and stored as it is. Bytes, because a store
    would otherwise encode a 6 MB string in one call (SQLite's binding, redis-py's encoder).
    """


def encode(value: Any) -> str | bytes:
    # Stored encoded in every store: the same JSON rules, and no aliasing of mutable values.
    if isinstance(value, Encoded):
        return value
    return json.dumps(value, ensure_ascii=False)


async def decode(raw: str | bytes) -> Any:
    """``json.loads(raw)``; a big value (a 1 MiB message's answer: 100-250 ms in one call)
    read in slices in a thread (issue 10).
    """
    if len(raw) < offload.THRESHOLD:
        return json.loads(raw)
    return await offload.off_loop(len(raw), _sliced_loads, raw)


def _loads(raw: str | bytes) -> Any:
    return json.loads(raw) if len(raw) < offload.THRESHOLD else _sliced_loads(raw)


def _sliced_loads(raw: str | bytes) -> Any:
    return jsonslices.loads(raw if isinstance(raw, str) else raw.decode())
