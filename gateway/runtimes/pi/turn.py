"""One turn as pi's events tell it: what to show, and whether pi is idle again (none of what
the events started is pending).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from ...events import (
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    ReasoningDelta,
    RuntimeEvent,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
)
from ..pump import EventQueue
from .mapping import last_assistant, pi_usage, text_of
from .process import Event

log = logging.getLogger("slashgate.pi")

_STOP_REASONS = {"aborted": "cancelled", "length": "max_tokens"}


@dataclass
class PiTurn:
    key: str  # the conversation's
    queue: EventQueue = field(default_factory=asyncio.Queue)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    running: bool = False  # between agent_start and agent_end
    retrying: bool = False  # between auto_retry_start and the retry's start (or its end)
    cancelled: bool = False
    text: bool = False  # some reply text was shown
    last: dict[str, Any] | None = None  # the last assistant message of the last run
    error: str | None = None  # an extension error, or a retry's final failure
    stopped: bool = False  # the process exited

    def show(self, text: str) -> None:
        if text:
            self.queue.put_nowait(MessageDelta(text))
            self.text = True

    def follow(self, event: Event) -> None:
        """One of pi's events (extension dialogs aside), synchronously and in pi's order."""
        kind = event.get("type")
        if kind == "process_exit":
            self.stopped = True
        elif kind == "agent_start":
            self.running, self.retrying = True, False
        elif kind == "agent_end":
            self.running = False
            self.last = last_assistant(event.get("messages"))
            if (spent := pi_usage(self.last)) is not None:
                self.queue.put_nowait(spent)
        elif kind == "message_update":
            delta = event.get("assistantMessageEvent") or {}
            if delta.get("type") == "text_delta":
                self.show(str(delta.get("delta", "")))
            elif delta.get("type") == "thinking_delta" and delta.get("delta"):
                self.queue.put_nowait(ReasoningDelta(str(delta["delta"])))
            return
        elif kind == "message_end":
            message = event.get("message") or {}
            if message.get("role") == "custom" and message.get("display"):
                self.show(text_of(message.get("content")))  # an extension's message to the user
            return
        elif kind == "tool_execution_start":
            title = str(event.get("toolName", "tool"))
            self.queue.put_nowait(ToolStart(str(event.get("toolCallId")), title))
            return
        elif kind == "tool_execution_update":
            self.queue.put_nowait(ToolRunning(str(event.get("toolCallId")), event.get("toolName")))
            return
        elif kind == "tool_execution_end":
            result = event.get("result") or {}
            output = text_of(result.get("content") if isinstance(result, dict) else None) or None
            tool_id = str(event.get("toolCallId"))
            failed = bool(event.get("isError"))
            self.queue.put_nowait(ToolEnd(tool_id, "failed" if failed else "completed", output))
            return
        elif kind == "auto_retry_start":
            self.retrying = True
            detail = f"attempt {event.get('attempt')} of {event.get('maxAttempts')}"
            self.queue.put_nowait(StatusChanged("retrying", detail))
        elif kind == "auto_retry_end":
            self.retrying = False
            if not event.get("success"):
                self.error = str(event.get("finalError") or "pi gave up retrying")
        elif kind == "extension_error":
            self.error = str(event.get("error") or "an extension failed")
            log.warning("pi extension error in %s: %s", self.key, self.error)
        elif kind != "compaction_end":
            return
        self.changed.set()

    def ending(self) -> RuntimeEvent:
        """The turn's last event, once pi is idle again."""
        last = self.last or {}
        reason = last.get("stopReason")
        if self.cancelled or reason == "aborted":
            return MessageEnd("cancelled")
        if reason == "error" or (self.error and not self.text):
            return ErrorEvent.from_text(str(last.get("errorMessage") or self.error or "pi failed"))
        return MessageEnd(_STOP_REASONS.get(str(reason), "end_turn"))
