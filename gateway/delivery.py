"""Delivery, the last stage of an input: its reply to the channel's sink, and the one log
line of the input. Also the sink's hooks as the stages call them,
and a turn's output held behind the previous turn's reply while that is still going out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from contract import Classification, ComposerInputMessage

from . import logs
from .events import RuntimeEvent
from .inbound import Outcome, Reply, ReplySink

log = logging.getLogger("slashgate.core")

# A sink's hooks that its class implements: the others do nothing, and are not called.
_HOOKS = ("accepted", "delta", "queued", "event", "final", "completed")
STREAMING = frozenset(("delta", "event"))  # hooks called while a turn runs
NO_SINK = ReplySink()
RENDER_FAILED = "channel failed to render"
# By sink class, looked up once per input (``hooks``): a channel has a handful of classes.
_HOOKS_OF: dict[type, frozenset[str]] = {}
_HOOKS_KEPT = 64


def hooks(kind: type) -> frozenset[str]:
    """The hooks that sink class ``kind`` overrides."""
    found = _HOOKS_OF.get(kind)
    if found is None:
        found = frozenset(n for n in _HOOKS if getattr(kind, n) is not getattr(ReplySink, n))
        if len(_HOOKS_OF) < _HOOKS_KEPT:
            _HOOKS_OF[kind] = found
    return found


async def safely(step: Awaitable[None]) -> None:
    """A channel's rendering failure must not end the run: log it and go on."""
    try:
        await step
    except Exception:
        log.exception(RENDER_FAILED)


class Behind(ReplySink):
    """A turn's sink while the previous turn's reply is still going out (``prior``): what
    this turn shows follows that reply, never overtakes it. Text gathers meanwhile and goes
    to the sink at once when that reply is out (the previews between are skipped); an event
    and the final reply wait for it; a final reply that comes first makes the gathered text
    moot. Acknowledgements (``accepted``, ``queued``) say nothing in the chat: at once.
    """

    def __init__(self, prior: asyncio.Future[None], sink: ReplySink) -> None:
        self._prior = prior
        self._sink = sink
        self._kept = hooks(type(sink))
        self._held: list[str] = []
        self._showing: asyncio.Future[None] | None = None

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        if "accepted" in self._kept:
            await self._sink.accepted(classification, forwarded)

    async def queued(self, ahead: int) -> None:
        if "queued" in self._kept:
            await self._sink.queued(ahead)

    async def delta(self, text: str) -> None:
        if self._caught_up():
            await self._sink.delta(text)
            return
        self._held.append(text)
        if self._showing is None:
            self._showing = asyncio.ensure_future(self._show())

    async def event(self, event: RuntimeEvent) -> None:
        await self._settled()
        await self._sink.event(event)

    async def final(self, reply: Reply) -> None:
        if self._showing is not None and not self._prior.done():
            self._showing.cancel()  # nothing shown yet: the final reply says it all
        await self._settled()
        if "final" in self._kept:
            await self._sink.final(reply)

    async def completed(self, outcome: Outcome) -> None:
        if "completed" in self._kept:
            await self._sink.completed(outcome)

    async def aclose(self) -> None:
        if self._showing is not None:
            self._showing.cancel()

    def _caught_up(self) -> bool:
        return self._prior.done() and (self._showing is None or self._showing.done())

    async def _settled(self) -> None:
        # asyncio.wait: this caller's cancel must not cancel the previous turn's delivery.
        await asyncio.wait({self._prior})
        if self._showing is not None:
            await asyncio.wait({self._showing})

    async def _show(self) -> None:
        await asyncio.wait({self._prior})
        while self._held:  # text that comes while the sink takes some goes next
            text = "".join(self._held)
            self._held.clear()
            await safely(self._sink.delta(text))


class Delivery:
    async def finish(
        self,
        sink: ReplySink,
        result: Classification,
        forwarded: ComposerInputMessage | None,
        reply: Reply,
    ) -> Outcome:
        """Deliver the reply (the journal's end is the input's owner's: gateway/answering.py)."""
        outcome = Outcome(result, forwarded, reply)
        kept = hooks(type(sink))
        try:
            if "final" in kept:
                await sink.final(reply)
        except Exception:
            log.exception(RENDER_FAILED)
        try:
            if "completed" in kept:
                await sink.completed(outcome)
        except Exception:
            log.exception(RENDER_FAILED)
        return outcome

    @staticmethod
    def drop(result: Classification) -> Outcome:
        """Input addressed to another bot, or refused in silence: no reply at all."""
        return Outcome(result, None, None)


def log_turn(outcome: Outcome, seconds: float) -> None:
    """The one INFO line per input: where, what it was, how it ended, how long it took."""
    result, reply = outcome.classification, outcome.reply
    if reply is None:
        ended = "dropped"  # addressed to another bot
    elif reply.category is None and reply.stop_reason not in (None, "end_turn"):
        ended = str(reply.stop_reason)  # cancelled, refusal, max_tokens: not failures
    else:
        ended = reply.category or "ok"
    # Channel and conversation are the line's context fields already (logs.bind).
    log.info(
        "turn",
        extra=logs.fields(
            classification=result.kind,
            command=result.command or "-",
            outcome=ended,
            duration=round(seconds, 3),  # seconds
        ),
    )
