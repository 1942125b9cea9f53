"""The run: an admitted input's turn in the runtime. Its place among the conversation's turns
across replicas, the journal's marks, the session wait, the runtime call under the deadline,
its events to the sink (a cancel stops it: gateway/stopping.py); then the reply to delivery.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from . import logs
from .admitted import Admitted
from .contracts import Contracts
from .conversation import Conversation, RunState
from .delivery import RENDER_FAILED, STREAMING, Behind, Delivery, safely
from .events import (
    Answered,
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    PermissionRequired,
    RuntimeEvent,
    SessionUpdated,
    StatusChanged,
)
from .inbound import Outcome, Reply, ReplySink
from .journal import Held, Journal
from .metrics import Metrics
from .replies import answered, delta, end_reply, note
from .runtimes.base import Runtime, Turn
from .sessions import Conversations, OpenFailed
from .settings import CoreSettings
from .state import StoreUnavailable
from .stopping import Stopper
from .tasks import BackgroundTasks

log = logging.getLogger("slashgate.core")

SHUTTING_DOWN = "the gateway is shutting down"


class Runs:
    def __init__(
        self,
        settings: CoreSettings,
        runtime: Runtime,
        metrics: Metrics,
        journal: Journal,
        background: BackgroundTasks,
        conversations: Conversations,
        contracts: Contracts,
        delivery: Delivery,
        stopper: Stopper,
    ) -> None:
        self._settings = settings
        self._runtime = runtime
        self._metrics = metrics
        self._journal = journal
        self._background = background
        self._conversations = conversations
        self._contracts = contracts
        self._delivery = delivery
        self._stopper = stopper

    async def turn(self, admitted: Admitted) -> Outcome:
        """Run an input that holds its conversation's slot (``conv.acquire``) and deliver
        its reply.

        The slot is let go of when the runtime's turn ends: the reply goes out after that,
        and the next turn of this conversation runs meanwhile, its output held behind this
        reply (``Behind``), so "busy" means a turn still running, never its delivery. With
        a shared store the conversation's lease is held until the reply is delivered: the
        next turn, whichever replica takes it, waits for it there.
        """
        journal, conversations = self._journal, self._conversations
        conv, sink, entry, result = admitted.conv, admitted.sink, admitted.entry, admitted.result
        name, agent_name, forwarded = admitted.name, admitted.agent_name, admitted.forwarded
        held: Held | None = None
        holder: asyncio.Task[None] | None = None
        delivered = False
        mine: asyncio.Future[None] | None = None  # this reply's delivery, once the slot is free
        prior = conv.delivering
        if prior is not None and not prior.done():
            sink = Behind(prior, sink)
        try:
            if entry is not None:
                entry.state, entry.command = "running", name
            if not conversations.closing and journal.shared:
                # The "running" mark goes with the lease (one round trip for both).
                held = await journal.turn(conv.key, entry, conversations.is_closing)
            if conversations.closing:
                reply = self._contracts.failure("generic", name, SHUTTING_DOWN)
            else:
                if held is not None:
                    holder = self._background.spawn(
                        journal.hold(held, lambda: self._stopper.stop_run(conv))
                    )
                message = admitted.message
                turn = Turn(
                    forwarded, agent_name, result.args, message.user, message.attachments, True
                )
                if entry is not None and held is None:
                    await journal.mark(entry)
                started = self._start(conv, turn, sink, admitted.hooks, agent_name or name)
                reply = started if isinstance(started, Reply) else await started
                if entry is not None:
                    await journal.answered(entry, reply, held.lease if held else None)
            mine = _free(conv)
            outcome = await self._delivery.finish(sink, result, forwarded, reply)
            delivered = True
        except StoreUnavailable as exc:  # no turn order to be had across replicas
            reply = self._contracts.failed(name, str(exc))
            if mine is None:
                mine = _free(conv)
            outcome = await self._delivery.finish(sink, result, forwarded, reply)
            delivered = True
        finally:
            if mine is None:
                conv.release()
            else:
                mine.set_result(None)
                if conv.delivering is mine:
                    conv.delivering = None
            if isinstance(sink, Behind):
                await sink.aclose()
            if holder is not None:
                holder.cancel()
            if held is not None and delivered and entry is not None:
                # Its end, as answering.py would journal it, with the lease: one round trip.
                await journal.release_finished(held, entry)
            elif held is not None:
                await journal.release(held)
        return outcome

    def _start(
        self,
        conv: Conversation,
        turn: Turn,
        sink: ReplySink,
        hooks: frozenset[str],
        name: str | None,
    ) -> Reply | Coroutine[Any, Any, Reply]:
        """The turn's reply when the runtime answered it at once for a sink that streams
        nothing: read here and now, without a deadline (nothing is awaited), a coroutine or
        a pass of the loop. Else ``_run``, to await. ``name``: the command as the user's
        texts show it (``turn.command``, or the name typed when the runtime's list was not
        loaded).
        """
        state = RunState(name)  # its task is set once it may wait (``stop_run``)
        conv.run = state
        bound = logs.bind_turn()
        events: AsyncIterator[RuntimeEvent] | None = None
        ends_here = True
        try:
            if conv.session is not None:
                try:
                    events = conv.session.run(turn)
                except Exception as exc:
                    return self._crashed(conv, name, exc)
                if type(events) is Answered and not hooks & STREAMING:
                    return answered(self._contracts, conv, state, events)
            ends_here = False  # ``_run`` ends it
            return self._run(conv, turn, sink, hooks, state, events, bound)
        finally:
            if ends_here:
                _end(conv, state, bound)

    async def _run(
        self,
        conv: Conversation,
        turn: Turn,
        sink: ReplySink,
        hooks: frozenset[str],
        state: RunState,
        events: AsyncIterator[RuntimeEvent] | None,
        bound: logs.Token,
    ) -> Reply:
        """A turn to wait for: its session if it is still opening, then its events. It is
        consumed in the input's task (no extra task per turn): the deadline cancels it here.
        """
        try:
            state.task = asyncio.current_task()
            async with asyncio.timeout(self._settings.run_timeout) as deadline:
                if events is None:  # still opening, or closed by /new meanwhile
                    await self._conversations.session(conv, deadline)
                return await self._consume(conv, turn, sink, state, events, hooks)
        except OpenFailed as exc:
            return self._contracts.failed(state.command, str(exc))
        except asyncio.CancelledError:
            if not state.forced:
                raise  # shutdown
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return end_reply(conv, state, "cancelled")  # stopped while its session opened
        except TimeoutError:
            try:
                await self._stopper.cancel_runtime(conv)
            except asyncio.CancelledError:
                if not state.forced:
                    raise
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return self._contracts.failure("timeout", state.command)
        finally:
            _end(conv, state, bound)

    async def _consume(
        self,
        conv: Conversation,
        turn: Turn,
        sink: ReplySink,
        state: RunState,
        events: AsyncIterator[RuntimeEvent] | None,
        hooks: frozenset[str],
    ) -> Reply:
        assert conv.session is not None
        try:
            if events is None:
                events = conv.session.run(turn)
            if type(events) is Answered:  # at hand: its list, not its async iterator
                for event in events.events:
                    if (reply := await self._take(conv, state, sink, event, hooks)) is not None:
                        return reply
            else:
                try:
                    async for event in events:
                        if (reply := await self._take(conv, state, sink, event, hooks)) is not None:
                            return reply
                finally:
                    # Closed now, not whenever it is collected: its clean-up (cancelling its
                    # own work) must not run into the next turn.
                    aclose = getattr(events, "aclose", None)
                    if aclose is not None:
                        await aclose()
        except asyncio.CancelledError:
            if not state.forced:
                raise  # the deadline, or shutdown
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return end_reply(conv, state, "cancelled")
        except Exception as exc:  # a runtime failure is one user-facing message, never a crash
            return self._crashed(conv, state.command, exc)
        return end_reply(conv, state, "cancelled" if state.stopping else "end_turn")

    async def _take(
        self,
        conv: Conversation,
        state: RunState,
        sink: ReplySink,
        event: RuntimeEvent,
        hooks: frozenset[str],
    ) -> Reply | None:
        """One event of the turn: its reply when the event ends it, else None."""
        if isinstance(event, MessageDelta):
            delta(conv, state, event)
            if "delta" in hooks:
                showing = sink.delta(event.text)
                try:  # ``safely``, in place: most turns pass here
                    await showing
                except Exception:
                    log.exception(RENDER_FAILED)
        elif isinstance(event, MessageEnd):
            return end_reply(conv, state, event.stop_reason)
        elif isinstance(event, ErrorEvent):
            return self._contracts.failure(event.category, state.command, event.message)
        elif isinstance(event, SessionUpdated):
            conv.apply(event)
        else:
            await self._show(conv, state, sink, event, hooks)
        return None

    async def _show(
        self,
        conv: Conversation,
        state: RunState,
        sink: ReplySink,
        event: RuntimeEvent,
        hooks: frozenset[str],
    ) -> None:
        """A tool, plan, reasoning, usage, permission, status or file event: to the channel."""
        note(conv, state, event)
        if "event" not in hooks:
            return
        await safely(sink.event(event))
        if isinstance(event, PermissionRequired):
            await safely(sink.event(StatusChanged("waiting_for_permission", event.title)))

    def _crashed(self, conv: Conversation, name: str | None, exc: Exception) -> Reply:
        log.exception("runtime failed in %s", conv.key, exc_info=exc)
        self._metrics.runtime_crashed(self._runtime.name, "turn")
        return self._contracts.failed(name, str(exc) or type(exc).__name__)


def _free(conv: Conversation) -> asyncio.Future[None]:
    """The runtime's turn is over: the conversation takes its next input now. The future is
    this turn's delivery, which that input's output waits for.
    """
    mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    conv.delivering = mine
    conv.release()
    return mine


def _end(conv: Conversation, state: RunState, bound: logs.Token) -> None:
    """A turn is over: the conversation's run slot state, its waiters, its log context."""
    conv.run = None
    state.over = True
    if state.ended is not None:  # a stop waits for it (``RunState.finished``)
        state.ended.set()
    logs.reset(bound)
    if conv.turns is not None:
        conv.turns.seconds.observe(time.monotonic() - state.started)
