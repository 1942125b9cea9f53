"""Intake, the first stage: an input journaled (and deduplicated) before its platform is
acknowledged, then taken in: refused while shutting down or when its conversation can have no
session, else routed once the session is open (or given up waiting for).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from . import logs
from .access import Access, Over, Pairing, Refusal
from .arrivals import Arrivals, Place
from .contracts import Contracts
from .conversation import Conversation
from .delivery import NO_SINK, Delivery, log_turn
from .inbound import InboundMessage, Outcome, Reply, ReplySink
from .journal import Journal
from .metrics import Metrics
from .routing import Router
from .run import SHUTTING_DOWN
from .sessions import Conversations, OpenFailed
from .state import Entry

log = logging.getLogger("slashgate.core")


class Intake:
    def __init__(
        self,
        journal: Journal,
        metrics: Metrics,
        contracts: Contracts,
        conversations: Conversations,
        router: Router,
        delivery: Delivery,
        access: Access,
        arrivals: Arrivals,
    ) -> None:
        self._journal = journal
        self._arrivals = arrivals
        self._access = access
        self._metrics = metrics
        self._contracts = contracts
        self._conversations = conversations
        self._router = router
        self._delivery = delivery

    async def accept(
        self,
        channel: str,
        conversation: str,
        body: dict[str, Any],
        claim: str | None = None,
        value: Any = 1,
    ) -> Entry | None:
        """Journal an input before its platform is acknowledged (see ``Journal.append``):
        None for a redelivery (a dedupe hit); StoreUnavailable means acknowledge nothing
        (answer 503).
        """
        key = f"{channel}:{conversation}"
        place = self._arrivals.arrive(key)  # before the store is awaited: arrival order
        try:
            entry = await self._journal.append(channel, key, body, claim, value)
        except BaseException:
            self._arrivals.settle(place)
            raise
        if entry is None:
            self._arrivals.settle(place)
            self._metrics.dedupe_hit(channel)
            return None
        entry.place = place
        return entry

    async def done(self, entry: Entry) -> None:
        """The input of ``entry`` needs nothing more (not handled, or handled and answered):
        it leaves its conversation's line, and the journal.
        """
        if entry.place is not None:
            self._arrivals.settle(entry.place)
        await self._journal.finish(entry)

    async def claim(self, channel: str, claim: str) -> bool:
        """Claim an input that is not journaled: False for a redelivery (a dedupe hit)."""
        if await self._journal.claim(claim):
            return True
        self._metrics.dedupe_hit(channel)
        return False

    async def handle(
        self, message: InboundMessage, sink: ReplySink | None = None, entry: Entry | None = None
    ) -> Outcome:
        """Run one input through the contract and, if it may run, the runtime. ``entry`` is
        its journal entry (``accept``), dropped once the reply is delivered.
        """
        started = time.monotonic()
        arrivals = self._arrivals
        place = entry.place if entry is not None else None
        if place is None:  # not journaled (or recovered): it arrives now
            place = arrivals.arrive(message.key)
        bound = logs.bind(message.channel, message.conversation, message.message_id)
        sink = sink or NO_SINK
        conversations = self._conversations
        # Chat channels only: the webhook and the web chat are the token holder's.
        policy = self._access.chats.get(message.channel)
        admitted = False
        try:
            if conversations.closing:
                outcome = await self._refuse(message, sink, SHUTTING_DOWN, entry)
            elif (
                policy is not None
                and (refusal := await self._access.admit(message, policy)) is not None
            ):
                outcome = await self._refused(message, sink, refusal, entry)
            else:
                admitted = policy is not None
                # An open conversation's input goes straight on; another waits for its session.
                conv = conversations.enter(message.key)
                try:
                    if conv.session is None or not conv.inventory_known.is_set():
                        outcome = await self._take(conv, message, sink, entry, place)
                    else:
                        outcome = await self._router.route(conv, message, sink, entry, place)
                finally:
                    conv.users -= 1
            if log.isEnabledFor(logging.INFO):
                log_turn(outcome, time.monotonic() - started)
        finally:
            arrivals.settle(place)  # refused, or failed on its way: the line goes on
            if admitted:
                self._access.leave(message)
            logs.reset(bound)
        self._metrics.handled(message.channel, outcome)
        return outcome

    async def _take(
        self,
        conv: Conversation,
        message: InboundMessage,
        sink: ReplySink,
        entry: Entry | None,
        place: Place,
    ) -> Outcome:
        """``route`` once the conversation's session is open, or given up waiting for."""
        try:
            await self._conversations.ready(conv, message)
        except OpenFailed as exc:  # the runtime cannot open a session: one reply, not a crash
            return await self._refuse(message, sink, str(exc), entry)
        return await self._router.route(conv, message, sink, entry, place)

    async def _refused(
        self, message: InboundMessage, sink: ReplySink, refusal: Refusal, entry: Entry | None
    ) -> Outcome:
        """What the access stage refused: the limits' text once per window, a stranger's
        pairing code, or nothing at all (a place or sender the policy does not admit).
        """
        result = self._contracts.host(message.bot_username).classify(message.text)
        name = result.name if result.kind != "not_slash" else None
        if isinstance(refusal, Pairing):
            reply = Reply(refusal.text)
        elif isinstance(refusal, Over) and refusal.tell:
            reply = self._contracts.failure("rate_limited", name, retry=refusal.retry)
        else:
            return await self._delivery.drop(result, entry)
        return await self._delivery.finish(sink, result, None, reply, entry)

    async def _refuse(
        self, message: InboundMessage, sink: ReplySink, error: str, entry: Entry | None
    ) -> Outcome:
        """The failure reply for input that cannot reach a session at all."""
        result = self._contracts.host(message.bot_username).classify(message.text)
        if result.for_other_bot:
            return await self._delivery.drop(result, entry)
        name = result.name if result.kind != "not_slash" else None
        return await self._delivery.finish(
            sink, result, None, self._contracts.failed(name, error), entry
        )
