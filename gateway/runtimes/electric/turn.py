"""One turn on an entity's stream: the run answering our send, followed until it ends, and the
failures a turn reports to the user.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from contract import Category

from ...events import (
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    RuntimeEvent,
    SessionUpdated,
    ToolEnd,
    ToolRunning,
    ToolStart,
)
from .wire import FORK_IN_PROGRESS, HANDLER_FAILED, ElectricError

# How the runtime's finish_reason reads as a unified stop reason.
_STOP_REASONS = {
    "stop": "end_turn",
    "aborted": "cancelled",
    "cancelled": "cancelled",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "content-filter": "refusal",
    "refusal": "refusal",
}


def http_failure(exc: ElectricError) -> ErrorEvent:
    """A refused request as the user's failure. The category comes from the status and code,
    never from the message (``Entity not found`` is no unknown command): a fork in progress
    passes (busy); everything else, 409 NOT_RUNNING included (a stopped entity stays
    stopped), is generic with the server's message.
    """
    category: Category = "busy" if exc.code == FORK_IN_PROGRESS else "generic"
    return ErrorEvent(category, exc.describe())


def network_failure(base: str, exc: BaseException) -> ErrorEvent:
    detail = str(exc) or type(exc).__name__
    return ErrorEvent("generic", f"cannot reach the Electric Agents server at {base} ({detail})")


@dataclass(slots=True)
class EntityTurn:
    """The run answering one send: the first run after our inbox event."""

    key: str
    events: asyncio.Queue[RuntimeEvent] = field(default_factory=asyncio.Queue)
    inbox_seen: bool = False
    run_id: str | None = None
    text_id: str | None = None
    error: ErrorEvent | None = None
    done: bool = False
    tools: set[str] = field(default_factory=set)  # keys of this run's tool calls

    def finish(self, event: RuntimeEvent) -> None:
        if not self.done:
            self.done = True
            self.events.put_nowait(event)

    def feed(self, event: dict[str, Any]) -> None:
        kind, key = event.get("type"), event.get("key")
        value = event.get("value")
        value = value if isinstance(value, dict) else {}
        if kind == "inbox":
            self.inbox_seen = self.inbox_seen or key == self.key
        elif not self.inbox_seen or self.done:
            return
        elif kind == "run":
            self._run(key, value, (event.get("headers") or {}).get("operation"))
        elif kind == "text_delta":
            if self.run_id is not None and value.get("run_id") == self.run_id:
                self._delta(value)
        elif kind == "error":
            self._error(value)
        elif kind == "tool_call":
            # Updates of a call may leave out its run: the call's key is enough once known.
            if key in self.tools or (self.run_id and value.get("run_id") == self.run_id):
                self._tool(str(key), value)
        elif kind == "step" and self.run_id and value.get("run_id") == self.run_id:
            if isinstance(value.get("model_id"), str):
                self.events.put_nowait(SessionUpdated(current_model=value["model_id"]))

    def _tool(self, key: str, value: dict[str, Any]) -> None:
        """A ``tool_call`` row (inserted when the call starts, then updated by key)."""
        status = value.get("status")
        self.tools.add(key)
        if status == "started":
            self.events.put_nowait(ToolStart(key, str(value.get("tool_name") or "tool")))
        elif status == "executing":
            self.events.put_nowait(ToolRunning(key))
        elif status in ("completed", "failed"):
            result = value.get("error") if status == "failed" else value.get("result")
            output = result if isinstance(result, str) else None
            self.events.put_nowait(ToolEnd(key, status, output or None))

    def _run(self, key: Any, value: dict[str, Any], operation: Any) -> None:
        if self.run_id is None:
            if operation == "insert" and isinstance(key, str):
                self.run_id = key
            return
        status = value.get("status")
        if key != self.run_id or status not in ("completed", "failed"):
            return
        reason = str(value.get("finish_reason") or "")
        if status == "failed":
            self.finish(self.error or ErrorEvent.from_text(f"the run failed ({reason})"))
        else:
            self.finish(MessageEnd(_STOP_REASONS.get(reason, "end_turn")))

    def _delta(self, value: dict[str, Any]) -> None:
        delta, text_id = value.get("delta"), value.get("text_id")
        if not isinstance(delta, str) or not delta:
            return
        if self.text_id is not None and text_id != self.text_id:
            self.events.put_nowait(MessageDelta("\n\n"))  # a new message of the same run
        self.text_id = text_id
        self.events.put_nowait(MessageDelta(delta))

    def _error(self, value: dict[str, Any]) -> None:
        message = str(value.get("message") or value.get("error_code") or "")
        error = ErrorEvent.from_text(message or "failed")
        run_id = value.get("run_id")
        if run_id is None or value.get("error_code") == HANDLER_FAILED:
            self.finish(error)  # the handler or the wake failed: no run will end it
        elif run_id == self.run_id:
            self.error = error  # decides the outcome if the run then fails
