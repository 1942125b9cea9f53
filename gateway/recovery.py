"""Recovery beside the pipeline: what a crash left in the journal, finished once the channels
can deliver (run what was received, tell the users whose turn was cut short, deliver the
replies made but not sent); with a shared store, the same for replicas that die, and the
cancels other replicas take for turns that run here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from .answering import Answering
from .contracts import Contracts
from .delivery import Delivery
from .inbound import InboundMessage, ReplySink
from .journal import Journal, reply_from
from .sessions import Conversations
from .settings import CoreSettings
from .state import Entry, StoreUnavailable
from .stopping import Stopper
from .tasks import BackgroundTasks

log = logging.getLogger("slashgate.core")

# A channel's way back to a journaled input after a restart: the message and where its reply
# goes, or None when the input is not for this gateway after all.
Recoverer = Callable[[Entry], Awaitable[tuple[InboundMessage, ReplySink] | None]]

RESTARTED = "the gateway restarted while it was running, so it did not finish; send it again"


class Recovery:
    def __init__(
        self,
        settings: CoreSettings,
        journal: Journal,
        background: BackgroundTasks,
        conversations: Conversations,
        contracts: Contracts,
        answering: Answering,
        stopper: Stopper,
        delivery: Delivery,
    ) -> None:
        self._settings = settings
        self._journal = journal
        self._background = background
        self._conversations = conversations
        self._contracts = contracts
        self._answering = answering
        self._stopper = stopper
        self._delivery = delivery
        self._recoverers: dict[str, Recoverer] = {}
        self._replicas: tuple[asyncio.Task[None], ...] = ()  # replica watch and cancel listener

    def recoverable(self, channel: str, recoverer: Recoverer) -> None:
        """A channel's recoverer of its journaled inputs (see ``recover``)."""
        self._recoverers[channel] = recoverer

    async def recover(self) -> None:
        """Finish what a crash left in the journal; with a shared store, keep doing so for
        replicas that die, and listen for cancels taken elsewhere.
        """
        await self._recover(starting=True)
        if self._journal.shared:
            self._replicas = (
                self._background.spawn(self._watch_replicas(), name="slashgate-replicas"),
                self._background.spawn(
                    self._journal.cancels(self._cancel_asked), name="slashgate-cancels"
                ),
            )

    def stop(self) -> None:
        for task in self._replicas:  # they loop until cancelled: nothing to wait for
            task.cancel()

    async def _watch_replicas(self) -> None:
        while not self._conversations.closing:
            await asyncio.sleep(self._settings.lease_ttl / 3)
            try:
                await self._journal.beat()
                await self._recover(starting=False)
            except StoreUnavailable as exc:
                log.warning("replica watch: %s", exc)

    def _cancel_asked(self, key: str) -> None:
        """Another replica took a /cancel for a conversation whose turn runs here."""
        conv = self._conversations.get(key)
        if conv is not None and conv.run is not None:
            self._background.spawn(self._stopper.stop_run(conv))

    async def _recover(self, starting: bool) -> None:
        conversations: dict[str, list[Entry]] = {}
        for entry in await self._journal.orphans(starting):
            conversations.setdefault(entry.conversation, []).append(entry)
        if conversations:
            log.info(
                "journal: recovering %d inputs in %d conversations",
                sum(map(len, conversations.values())),
                len(conversations),
            )
        for entries in conversations.values():
            self._background.spawn(self._recover_in_order(entries))

    async def _recover_in_order(self, entries: list[Entry]) -> None:
        for entry in entries:
            try:
                await self._recover_one(entry)
            except Exception:
                log.exception("journal: recovering %s failed", entry.id)

    async def _recover_one(self, orphan: Entry) -> None:
        journal = self._journal
        entry = await journal.adopt(orphan) if journal.shared else orphan
        if entry is None:
            return  # another replica took it
        recoverer = self._recoverers.get(entry.channel)
        restored = await recoverer(entry) if recoverer is not None else None
        if restored is None:
            log.warning("journal: input %s of %s cannot be recovered", entry.id, entry.channel)
            await journal.finish(entry)
            return
        message, sink = restored
        try:
            if entry.state == "running" and self._settings.recovery == "rerun":
                entry.state = "received"
            if entry.state == "received":
                await self._answering.handle(message, sink, entry)
                return
            result = self._contracts.host(message.bot_username).classify(message.text)
            if entry.state == "answered" and entry.reply is not None:
                reply = reply_from(entry.reply)
            else:
                reply = self._contracts.failure("generic", entry.command, RESTARTED)
            await self._delivery.finish(sink, result, None, reply)
            await self._journal.finish(entry)  # its reply, at last: nothing more is due
        finally:
            await sink.aclose()
