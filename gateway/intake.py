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
from .delivery import Delivery, log_turn
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

    async def claim(self, channel: str, claim: str) -> bool:
        """Claim an input that is not journaled: False for a redelivery (a dedupe hit)."""
        if await self._journal.claim(claim):
            return True
        self._metrics.dedupe_hit(channel)
        return False

    async def handle(
        self, message: InboundMessage, sink: ReplySink, entry: Entry | None, place: Place
    ) -> Outcome:
        """Run one input through the contract and, if it may run, the runtime. ``entry`` is
        its journal entry (``accept``); ``place``, its place in the conversation's arrival
        order.
        """
        started = time.monotonic()
        bound = logs.bind(message.channel, message.conversation, message.message_id)
        conversations = self._conversations
        # Chat channels only: the webhook and the web chat are the token holder's.
        policy = self._access.chats.get(message.channel)
        admitted = False
        try:
            if conversations.closing:
                outcome = await self._refuse(message, sink, SHUTTING_DOWN)
            elif (
                policy is not None
                and (refusal := await self._access.admit(message, policy)) is not None
            ):
                outcome = await self._refused(message, sink, refusal)
            else:
                # Counted in by the limits (``admit``), when there are any: counted out below.
                admitted = policy is not None and self._access.limits.active
                # An open conversation's input goes straight on; another waits for its session.
                conv = conversations.enter(place.key)  # ``message.key``, made already
                try:
                    why = None
                    if conv.session is None or not conv.inventory_known.is_set():
                        why = await self._ready(conv, message)
                    if place.withdrawn:  # while it waited for its session: nothing to do
                        outcome = self._delivery.drop(
                            self._contracts.host(message.bot_username).classify(message.text)
                        )
                    elif why is None:
                        outcome = await self._router.route(conv, message, sink, entry, place)
                    else:  # the runtime cannot open a session: one reply, not a crash
                        outcome = await self._refuse(message, sink, why)
                finally:
                    conv.users -= 1
            if log.isEnabledFor(logging.INFO):
                log_turn(outcome, time.monotonic() - started)
        finally:
            if admitted:
                self._access.leave(message)
            logs.reset(bound)
        self._metrics.handled(message.channel, outcome)
        return outcome

    async def _ready(self, conv: Conversation, message: InboundMessage) -> str | None:
        """Once the conversation's session is open, or given up waiting for: None, else why
        it cannot open.
        """
        try:
            await self._conversations.ready(conv, message)
        except OpenFailed as exc:
            return str(exc)
        return None

    async def _refused(self, message: InboundMessage, sink: ReplySink, refusal: Refusal) -> Outcome:
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
            return self._delivery.drop(result)
        return await self._delivery.finish(sink, result, None, reply)

    async def _refuse(self, message: InboundMessage, sink: ReplySink, error: str) -> Outcome:
        """The failure reply for input that cannot reach a session at all."""
        result = self._contracts.host(message.bot_username).classify(message.text)
        if result.for_other_bot:
            return self._delivery.drop(result)
        name = result.name if result.kind != "not_slash" else None
        return await self._delivery.finish(sink, result, None, self._contracts.failed(name, error))
