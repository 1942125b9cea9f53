"""Delivery, the last stage of an input: its reply to the channel's sink, then the journal's
final state, and the one log line of the input. Also the sink's hooks as the stages call them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from contract import Classification, ComposerInputMessage

from . import logs
from .inbound import Outcome, Reply, ReplySink
from .journal import Journal
from .state import Entry

log = logging.getLogger("slashgate.core")

# A sink's hooks that its class implements: the others do nothing, and are not called.
_HOOKS = ("accepted", "delta", "queued", "event", "final", "completed")
STREAMING = frozenset(("delta", "event"))  # hooks called while a turn runs
NO_SINK = ReplySink()
_RENDER_FAILED = "channel failed to render"
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
        log.exception(_RENDER_FAILED)


class Delivery:
    def __init__(self, journal: Journal) -> None:
        self._journal = journal

    async def finish(
        self,
        sink: ReplySink,
        result: Classification,
        forwarded: ComposerInputMessage | None,
        reply: Reply,
        entry: Entry | None = None,
    ) -> Outcome:
        """Deliver the reply, then journal ``entry`` as delivered (without it: the caller
        does, once it has let the conversation go).
        """
        outcome = Outcome(result, forwarded, reply)
        kept = hooks(type(sink))
        try:
            if "final" in kept:
                await sink.final(reply)
        except Exception:
            log.exception(_RENDER_FAILED)
        try:
            if "completed" in kept:
                await sink.completed(outcome)
        except Exception:
            log.exception(_RENDER_FAILED)
        if entry is not None:
            await self._journal.finish(entry)
        return outcome

    async def drop(self, result: Classification, entry: Entry | None) -> Outcome:
        """Input addressed to another bot: no reply at all."""
        if entry is not None:
            await self._journal.finish(entry)
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
