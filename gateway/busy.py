"""The busy policy, the stage between routing and the run: whether an admitted input runs now,
waits for the conversation's running turn (``queue``), is turned away (``reject``, or a
command: a command never waits) or stops that turn (``interrupt``); across replicas with a
shared store. An input takes its place in the queue in its conversation's arrival order, and
before the sink's ``accepted``/``queued`` hooks are awaited. One withdrawn before its turn
started (gateway/withdrawals.py) leaves here, or the queue, without running.
"""

from __future__ import annotations

import logging

from .admitted import Admitted
from .arrivals import Arrivals
from .contracts import Contracts
from .delivery import RENDER_FAILED, Delivery, safely
from .inbound import Outcome
from .journal import Journal
from .run import Runs
from .settings import CoreSettings
from .stopping import Stopper

log = logging.getLogger("slashgate.core")


class Busy:
    def __init__(
        self,
        settings: CoreSettings,
        journal: Journal,
        contracts: Contracts,
        arrivals: Arrivals,
        stopper: Stopper,
        delivery: Delivery,
        runs: Runs,
    ) -> None:
        self._settings = settings  # read per input: an operator's change applies at once
        self._journal = journal
        self._contracts = contracts
        self._arrivals = arrivals
        self._stopper = stopper
        self._delivery = delivery
        self._runs = runs

    async def admit(self, turn: Admitted) -> Outcome:
        """Run ``turn`` once the conversation's slot is its own, or answer "busy"; nothing
        for a turn withdrawn before it started (gateway/withdrawals.py).
        """
        conv, policy, slash = turn.conv, self._settings.busy_policy, turn.name is not None
        place = turn.place
        if (slash or policy != "queue") and self._journal.shared:
            if policy == "interrupt" and not slash:
                await self._journal.cancel_elsewhere(conv.key)
            elif await self._journal.running_elsewhere(conv.key):  # busy on another replica
                return await self._busy(turn)
        if not place.first:  # the inputs that came before it queue first
            await self._arrivals.turn(place)
        if conv.try_acquire():
            if place.withdrawn:  # on its way here: the slot is not its to keep
                conv.release()
                return self._withdrawn(turn)
            place.started = True
            self._arrivals.settle(place)
            if "accepted" in turn.hooks:
                accepting = turn.sink.accepted(turn.result, turn.forwarded)
                try:  # ``safely``, in place: most turns pass here
                    await accepting
                except Exception:
                    log.exception(RENDER_FAILED)
        elif place.withdrawn:
            return self._withdrawn(turn)
        elif (
            slash
            or policy == "reject"
            or (policy == "queue" and conv.queued >= self._settings.max_queue)
        ):
            return await self._busy(turn)
        else:
            ahead = conv.queued + 1
            waiter = conv.line_up(front=policy == "interrupt")  # its place, before any await
            place.queue = (conv, waiter)
            self._arrivals.settle(place)
            try:
                if "accepted" in turn.hooks:
                    await safely(turn.sink.accepted(turn.result, turn.forwarded))
                if policy == "queue" and "queued" in turn.hooks:
                    await safely(turn.sink.queued(ahead))
                if policy == "interrupt":
                    await self._stopper.stop_run(conv)
            except BaseException:
                conv.leave_line(waiter)
                raise
            if not await conv.wait(waiter):  # withdrawn while it waited
                return self._withdrawn(turn)
            place.started = True
        return await self._runs.turn(turn)

    async def _busy(self, turn: Admitted) -> Outcome:
        self._arrivals.settle(turn.place)
        busy = self._contracts.failure("busy", turn.name)
        return await self._delivery.finish(turn.sink, turn.result, None, busy)

    def _withdrawn(self, turn: Admitted) -> Outcome:
        """No run and no reply: its channel took it back."""
        self._arrivals.settle(turn.place)
        return self._delivery.drop(turn.result)
