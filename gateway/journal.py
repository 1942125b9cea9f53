"""The inbound journal: every accepted input, from before its platform is acknowledged until
its reply is delivered, so that a crash loses nothing and runs nothing twice.

An entry moves ``received -> running -> answered`` and is dropped once its reply is out. On
start-up (and, with several replicas, whenever a replica dies) what is left is recovered:
``received`` runs, ``running`` gets a restart notice (or runs again: ``recovery = "rerun"``),
``answered`` is delivered. With a shared store, a conversation's turns run under a lease
(``conversation:<key>``) in journal order, whichever replica took each input; every replica
holds ``replica:<id>`` while it lives, so the others can tell a dead owner from a slow one.
Another replica's turn makes a slash command busy here too, and ``/cancel`` reaches it over
the store's messages.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, fields
from operator import attrgetter
from typing import Any

from .events import UsageReported
from .inbound import Reply
from .state import Entry, Lease, StateStore, StoreUnavailable

log = logging.getLogger("slashgate.journal")

_POLL_START, _POLL_CAP = 0.02, 0.5  # seconds between looks at a conversation's turn order


def replica_name(configured: str | None) -> str:
    """This process's name among replicas: the configured one (stable across restarts, so a
    restarted replica recovers its own inputs at once), else a fresh one.
    """
    return configured or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def reply_record(reply: Reply) -> dict[str, Any]:
    # Not asdict(reply): it deep-copies every field (10-40 us per input, before its reply is
    # sent); the fields are JSON values already, but for ``usage``.
    record = dict(zip(_REPLY_FIELDS, _reply_values(reply), strict=True))
    if reply.usage is not None:
        record["usage"] = asdict(reply.usage)
    return record


_REPLY_FIELDS = tuple(f.name for f in fields(Reply))
_reply_values = attrgetter(*_REPLY_FIELDS)


def reply_from(record: dict[str, Any]) -> Reply:
    usage = record.get("usage")
    if usage is not None:  # journaled as a dict: the sinks render a UsageReported
        record = {**record, "usage": UsageReported(**usage)}
    return Reply(**record)


@dataclass(slots=True)
class Held:
    """A lease a turn holds: renewing it may give it a new token."""

    lease: Lease


class Journal:
    def __init__(
        self, store: StateStore, replica: str, dedupe_ttl: float, lease_ttl: float
    ) -> None:
        self.store = store
        self.shared = store.shared  # read on every turn: an attribute, not a property
        self.replica = replica
        self.dedupe_ttl = dedupe_ttl
        self.lease_ttl = lease_ttl
        self._alive: Lease | None = None
        self.started = time.time()

    # -- entries ---------------------------------------------------------------------------

    async def append(
        self,
        channel: str,
        conversation: str,
        body: dict[str, Any],
        claim: str | None,
        value: Any = 1,
    ) -> Entry | None:
        """Journal an input before its platform is acknowledged: None when ``claim`` says it
        came before (a redelivery). Raises StoreUnavailable: then acknowledge nothing.
        """
        entry = Entry(
            id=secrets.token_hex(8),
            conversation=conversation,
            channel=channel,
            body=body,
            owner=self.replica,
            created=time.time(),
        )
        return await self.store.append(entry, claim, self.dedupe_ttl, value)

    async def claim(self, key: str) -> bool:
        """Claim an input that is not journaled (for ``dedupe_ttl``): False when it came before."""
        claimed, _ = await self.store.claim(key, 1, self.dedupe_ttl)
        return claimed

    async def mark(self, entry: Entry, fence: Lease | None = None) -> bool:
        """Write an entry's new state. After the platform was acknowledged a failing store
        cannot refuse the input any more: the turn goes on, and the failure is logged.
        """
        try:
            return await self.store.update(entry, fence)
        except StoreUnavailable as exc:
            log.warning("journal: entry %s stays %s in the store: %s", entry.id, entry.state, exc)
            return True

    async def answered(self, entry: Entry, reply: Reply, fence: Lease | None = None) -> bool:
        """``entry``'s turn made ``reply``: kept in the journal until it is delivered."""
        entry.state, entry.reply = "answered", reply_record(reply)
        return await self.mark(entry, fence)

    async def finish(self, entry: Entry) -> None:
        if entry.state == "done":
            return
        entry.state = "done"
        try:
            await self.store.finish(entry)
        except StoreUnavailable as exc:
            log.warning("journal: delivered entry %s not dropped: %s", entry.id, exc)

    # -- replicas --------------------------------------------------------------------------

    async def beat(self) -> None:
        """Say this replica lives (for ``lease_ttl`` seconds)."""
        if self._alive is None or not await self.store.renew(self._alive, self.lease_ttl):
            self._alive = await self.store.acquire(
                f"replica:{self.replica}", self.replica, self.lease_ttl
            )

    async def orphans(self, starting: bool) -> list[Entry]:
        """Entries nobody alive is looking after, oldest first: at start-up, those written
        before this process started (the channels already take input meanwhile); with a
        shared store, also those of replicas that are gone.
        """
        entries = await self.store.pending()
        if not self.shared:
            return [e for e in entries if e.created < self.started] if starting else []
        alive: dict[str, bool] = {}
        orphaned = []
        for entry in entries:
            if entry.owner == self.replica:  # a restart under a stable replica_id
                if starting and entry.created < self.started:
                    orphaned.append(entry)
                continue
            if entry.owner not in alive:
                alive[entry.owner] = await self.store.holder(f"replica:{entry.owner}") is not None
            if not alive[entry.owner]:
                orphaned.append(entry)
        return orphaned

    async def adopt(self, entry: Entry) -> Entry | None:
        """Take a dead replica's entry over, under its conversation's lease so that no other
        replica adopts it too: the entry as it is now, or None when it is someone else's.
        """
        lease = await self.store.acquire(_turn_name(entry.conversation), self.replica, 5.0)
        if lease is None:
            return None
        try:
            current = next(
                (e for e in await self.store.pending(entry.conversation) if e.id == entry.id), None
            )
            if current is None or current.owner != entry.owner:
                return None
            current.owner = self.replica
            if not await self.store.update(current, lease):
                return None
            return current
        finally:
            await self.store.release(lease)

    # -- turn order across replicas --------------------------------------------------------

    async def turn(
        self, conversation: str, entry: Entry | None, stop: Callable[[], bool]
    ) -> Held | None:
        """Wait for the conversation's lease, and until every older input of it has been
        answered: its turns then run one at a time, in order, whichever replica took each.
        ``entry``'s status (its "running" mark) is written with the lease, in the same step.
        None when the store is not shared (one process: its own queue keeps the order).
        """
        if not self.shared:
            return None
        delay = _POLL_START
        seq = None if entry is None else entry.seq
        while not stop():
            lease = await self.store.take_turn(
                _turn_name(conversation), self.replica, self.lease_ttl, conversation, seq, entry
            )
            if lease is not None:
                return Held(lease)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _POLL_CAP)
        raise StoreUnavailable("the gateway is shutting down")

    async def hold(self, held: Held, lost: Callable[[], Awaitable[object]]) -> None:
        """Renew ``held.lease`` until cancelled. A lease that expired (the store was down, or
        lost its data) is taken again if nobody else has it; ``lost`` is called if someone has.
        """
        while True:
            await asyncio.sleep(self.lease_ttl / 3)
            try:
                if await self.store.renew(held.lease, self.lease_ttl):
                    continue
                again = await self.store.acquire(held.lease.name, self.replica, self.lease_ttl)
            except StoreUnavailable as exc:
                log.warning("cannot renew the lease of %s: %s", held.lease.name, exc)
                continue
            if again is None:
                log.error("lost the lease of %s to another replica", held.lease.name)
                await lost()
                return
            held.lease = again  # its new token fences the turn's next writes

    async def lead(
        self,
        name: str,
        elected: Callable[[], Awaitable[None]],
        deposed: Callable[[], Awaitable[None]],
    ) -> None:
        """Hold the lease ``name`` whenever no other replica does, until cancelled: work only
        one replica may do (Telegram polling, the default menu) starts with ``elected`` and
        stops with ``deposed``. Let go of at the end, so that another replica takes over.
        """
        lease: Lease | None = None
        try:
            while True:
                try:
                    if lease is None:
                        lease = await self.store.acquire(name, self.replica, self.lease_ttl)
                        if lease is not None:
                            log.info("this replica leads %s", name)
                            await elected()
                    elif not await self.store.renew(lease, self.lease_ttl):
                        lease = None
                        log.warning("this replica no longer leads %s", name)
                        await deposed()
                except StoreUnavailable as exc:
                    log.warning("leading %s: %s", name, exc)
                await asyncio.sleep(self.lease_ttl / 3)
        finally:
            await self.release(lease)

    # -- a conversation's turn on another replica ------------------------------------------

    async def running_elsewhere(self, conversation: str) -> bool:
        """Whether another replica holds the conversation's turn now (shared stores only)."""
        if not self.shared:
            return False
        holder = await self.store.holder(_turn_name(conversation))
        return holder is not None and holder != self.replica

    async def cancel_elsewhere(self, conversation: str) -> bool:
        """Ask the replica running the conversation's turn to cancel it; False when no other
        replica runs one.
        """
        if not await self.running_elsewhere(conversation):
            return False
        await self.store.publish(_CANCELS, conversation)
        return True

    async def cancels(self, cancel: Callable[[str], object]) -> None:
        """Call ``cancel(conversation)`` for each cancel another replica asks for, until
        cancelled; listening again, with backoff, whenever the store drops the subscription.
        """
        delay = _POLL_START
        while True:
            try:
                async for conversation in self.store.listen(_CANCELS):
                    delay = _POLL_START
                    cancel(conversation)
            except StoreUnavailable as exc:
                log.warning("listening for cancels: %s", exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _POLL_CAP)

    async def release_finished(self, held: Held, entry: Entry) -> None:
        """A delivered turn's end: its lease let go and its entry dropped, in one step."""
        entry.state = "done"
        try:
            await self.store.release_finished(held.lease, entry)
        except StoreUnavailable as exc:  # the lease expires by itself
            log.warning("journal: delivered entry %s not dropped: %s", entry.id, exc)

    async def release(self, lease: Lease | Held | None) -> None:
        if isinstance(lease, Held):
            lease = lease.lease
        if lease is None:
            return
        try:
            await self.store.release(lease)
        except StoreUnavailable as exc:  # it expires by itself
            log.warning("cannot release the lease of %s: %s", lease.name, exc)


_CANCELS = "cancel"  # the topic: a conversation key, whose running turn is to be cancelled


def _turn_name(conversation: str) -> str:
    return f"conversation:{conversation}"
