"""The one owner of an input's life once it reaches the gateway: its place in its
conversation's arrival order (and, until its turn, among the inputs that may be withdrawn),
its user told once how it ended (the reply, the attachment refusal, a bug in the pipeline,
the channel stopping mid-turn; nothing when it was withdrawn), and the journal's end,
decided here from what the sink says it delivered. The same for every channel: a chain of
small steps around the intake stage, composed once when the gateway is built (as aiogram
composes its middlewares, but not per call): each step is bound to the next in front of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any

from contract import Category

from .arrivals import Arrivals, Place
from .attachments import AttachmentError
from .contracts import Contracts
from .delivery import NO_SINK, Delivery
from .inbound import InboundMessage, Outcome, Reply, ReplySink
from .journal import Journal
from .state import Entry
from .withdrawals import Withdrawals

log = logging.getLogger("slashgate.core")

STOPPED = "the gateway stopped before the reply was finished"

Given = InboundMessage | Awaitable[InboundMessage]  # the input, or what makes it (its files)
Next = Callable[[Given, ReplySink, Entry | None], Coroutine[Any, Any, Outcome]]
Stage = Callable[[InboundMessage, ReplySink, Entry | None, Place], Awaitable[Outcome]]


class Answering:
    def __init__(
        self,
        journal: Journal,
        arrivals: Arrivals,
        contracts: Contracts,
        delivery: Delivery,
        withdrawals: Withdrawals,
        intake: Stage,
    ) -> None:
        self._journal = journal
        self._arrivals = arrivals
        self._withdrawable = withdrawals.places
        self._contracts = contracts
        self._delivery = delivery
        self._intake = intake
        answered: Next = partial(self._answer_once, self._arrive)  # innermost first
        self._chain = partial(self._finish, answered)
        self._unjournaled = answered  # no entry: no journal's end to decide (the webhook)

    async def handle(
        self, message: Given, sink: ReplySink | None = None, entry: Entry | None = None
    ) -> Outcome:
        """``message`` (or what makes it) through the gateway, its user told once how it
        ended; ``entry``, its journal entry (``accept``), finished once that was delivered.
        """
        if entry is None:
            return await self._unjournaled(message, sink or NO_SINK, None)
        return await self._chain(message, sink or NO_SINK, entry)

    async def _finish(
        self, step: Next, message: Given, sink: ReplySink, entry: Entry | None
    ) -> Outcome:
        """The journal's end. Answered: finished. Stopped on the way: finished when the
        sink says the user was told (``finished``), else the next start runs it again.
        """
        assert entry is not None  # ``handle`` skips this step for an input without one
        try:
            outcome = await step(message, sink, entry)
        except BaseException:
            if sink.finished:
                await self._journal.finish(entry)
            raise
        await self._journal.finish(entry)
        return outcome

    async def _answer_once(
        self, step: Next, message: Given, sink: ReplySink, entry: Entry | None
    ) -> Outcome:
        """One reply whatever fails on the way."""
        try:
            return await step(message, sink, entry)
        except AttachmentError as exc:  # one reply; nothing goes to the runtime
            return await self._tell(message, sink, self._failure("invalid", str(exc)))
        except Exception as exc:  # a bug in the pipeline still reaches the user, once
            log.exception("handling an input failed")
            error = str(exc) or type(exc).__name__
            return await self._tell(message, sink, self._failure("generic", error))
        except asyncio.CancelledError:  # still running when the channel stopped
            if sink.finished is False:  # it can tell, and was not: no next start runs it
                await self._tell(message, sink, self._failure("generic", STOPPED))
            raise

    async def _arrive(self, message: Given, sink: ReplySink, entry: Entry | None) -> Outcome:
        """Its place in the conversation's arrival order (taken by ``accept``, or now), let
        go of however it ends; withdrawable meanwhile, until its turn starts.
        """
        place = entry.place if entry is not None else None
        if not isinstance(message, InboundMessage):
            try:
                message = await message
            except BaseException:
                if place is not None:
                    self._arrivals.settle(place)
                raise
        if place is None:
            place = self._arrivals.arrive(message.key)
        # Withdrawable until its turn starts (gateway/withdrawals.py), when it can be named.
        key = (
            None
            if message.message_id is None
            else (message.channel, message.message_id, message.user)
        )
        if key is not None:
            self._withdrawable[key] = place
        try:
            return await self._intake(message, sink, entry, place)
        finally:
            if not place.settled:  # refused or failed on its way: the line goes on
                self._arrivals.settle(place)
            if key is not None and self._withdrawable.get(key) is place:  # not a later one's
                del self._withdrawable[key]

    async def done(self, entry: Entry) -> None:
        """The input of ``entry`` needs nothing more (never handled: not for the bot, say):
        it leaves its conversation's line, and the journal.
        """
        if entry.place is not None and not entry.place.settled:
            self._arrivals.settle(entry.place)
        if entry.state != "done":  # answered: ``_finish`` journaled its end already
            await self._journal.finish(entry)

    def _failure(self, category: Category, error: str) -> Reply:
        return self._contracts.failure(category, None, error)

    async def _tell(self, message: Given, sink: ReplySink, reply: Reply) -> Outcome:
        text = message.text if isinstance(message, InboundMessage) else ""
        result = self._contracts.host(None).classify(text)
        return await self._delivery.finish(sink, result, None, reply)
