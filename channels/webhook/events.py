"""The webhook's server-sent events for what a turn does besides its text (README, HTTP API)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gateway.api import (
    PermissionRequired,
    PlanUpdated,
    ReasoningDelta,
    RuntimeEvent,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)

_TOOL_PHASES = {ToolStart: "start", ToolRunning: "running", ToolEnd: "end"}


def sse_event(
    event: RuntimeEvent, show_reasoning: bool = True
) -> tuple[str, dict[str, Any]] | None:
    """The SSE event name and data for a runtime event; None for what is not sent."""
    if isinstance(event, ToolStart | ToolRunning | ToolEnd):
        phase = _TOOL_PHASES[type(event)]
        return "tool", {"type": type(event).__name__, "phase": phase, **asdict(event)}
    if isinstance(event, PermissionRequired):
        return "permission", asdict(event)
    if isinstance(event, StatusChanged):
        return "status", asdict(event)
    if isinstance(event, PlanUpdated):
        return "plan", asdict(event)
    if isinstance(event, ReasoningDelta):
        return ("reasoning", {"text": event.text}) if show_reasoning else None
    if isinstance(event, UsageReported):
        return "usage", _figures(event)
    return None


def usage_body(usage: UsageReported | None) -> dict[str, Any] | None:
    """The reported figures only (nothing the runtime left out)."""
    return None if usage is None else _figures(usage)


def _figures(usage: UsageReported) -> dict[str, Any]:
    return {k: v for k, v in asdict(usage).items() if v is not None}
