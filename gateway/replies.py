"""What a turn's events make of its reply: the text's parts, what else the turn did (tools,
a plan, usage, permission requests), and the reply's text once the turn ends.
"""

from __future__ import annotations

import time

from .contracts import Contracts
from .conversation import Conversation, RunState
from .events import (
    Answered,
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    PermissionRequired,
    PlanUpdated,
    RuntimeEvent,
    SessionUpdated,
    ToolStart,
    UsageReported,
)
from .inbound import Reply

_STOP_NOTES = {
    "cancelled": "_(cancelled)_",
    "refusal": "_(the agent declined to answer)_",
    "max_tokens": "_(reply cut short: the agent hit its token limit)_",
    "max_turn_requests": "_(reply cut short: the agent hit its request limit)_",
}
# Some agents (claude-agent-acp) answer the first prompt after a cancel with an empty turn.
EMPTY_AFTER_CANCEL = (
    "The agent returned nothing (its previous turn had just been cancelled). "
    "Send your message again."
)


def answered(contracts: Contracts, conv: Conversation, state: RunState, events: Answered) -> Reply:
    """The reply of a whole stream at hand, for a sink without streaming hooks: read here
    and now, nothing awaited (``Runs.run``'s fast path).
    """
    for event in events.events:
        if isinstance(event, MessageDelta):
            delta(conv, state, event)
        elif isinstance(event, MessageEnd):
            return end_reply(conv, state, event.stop_reason)
        elif isinstance(event, ErrorEvent):
            return contracts.failure(event.category, state.command, event.message)
        elif isinstance(event, SessionUpdated):
            conv.apply(event)
        else:
            note(conv, state, event)
    return end_reply(conv, state, "cancelled" if state.stopping else "end_turn")


def delta(conv: Conversation, state: RunState, event: MessageDelta) -> None:
    """A chunk of the reply's text."""
    if not state.parts and conv.turns is not None:
        conv.turns.first_delta.observe(time.monotonic() - state.started)
    state.parts.append(event.text)


def note(conv: Conversation, state: RunState, event: RuntimeEvent) -> None:
    """What the core keeps of an event besides the text."""
    if isinstance(event, UsageReported):
        state.usage = event if state.usage is None else state.usage.merged(event)
    elif isinstance(event, ToolStart | PlanUpdated):
        state.acted = True
    elif isinstance(event, PermissionRequired):  # answerable once the channel shows it
        options = frozenset(o.option_id for o in event.options)
        conv.remember_permission(event.request_id, options)


def end_reply(conv: Conversation, state: RunState, stop_reason: str) -> Reply:
    """The reply of a turn that ended for ``stop_reason``."""
    text = "".join(state.parts)
    stop_note = _STOP_NOTES.get(stop_reason)
    if stop_note:
        text = f"{text}\n\n{stop_note}" if text else stop_note
    elif not text and conv.after_cancel and not state.acted:
        text = EMPTY_AFTER_CANCEL
    elif not text:
        text = f"✅ /{state.command} executed." if state.command else "✅ Done."
    conv.after_cancel = stop_reason == "cancelled"
    return Reply(text, None, stop_reason, slash=state.command is not None, usage=state.usage)
