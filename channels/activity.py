"""What a turn does besides its text (tools, plan, reasoning, status), folded into one state
that each channel renders natively, and the words and marks every channel uses for it.

Bounded: the last ``MAX_TOOLS`` tool calls and the last ``MAX_REASONING`` characters of
reasoning are kept; a channel shows fewer (``SHOWN_TOOLS``).
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from gateway.api import (
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    Reply,
    RuntimeEvent,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)

MAX_TOOLS = 50
SHOWN_TOOLS = 5
MAX_REASONING = 4000
SHOWN_PLAN = 20
TITLE = 80  # characters of a tool title or plan entry shown
PLAN_TEXT = 1000  # characters of a plan given as Markdown shown
OUTPUT = 60  # characters of a tool's output shown (its first line)

ToolState = Literal["pending", "running", "completed", "failed"]
TOOL_MARKS: dict[ToolState, str] = {
    "pending": "⏳",
    "running": "⚙️",
    "completed": "✅",
    "failed": "❌",
}
PLAN_MARKS = {"pending": "⬜", "in_progress": "▶️", "completed": "✅"}
# Statuses worth a line while the turn runs; "generating" and "idle" are the normal course.
_SHOWN_STATUSES = {"retrying", "waiting_for_permission", "paused", "error"}


@dataclass(slots=True)
class Tool:
    title: str
    kind: str | None = None
    state: ToolState = "pending"
    output: str | None = None

    @property
    def line(self) -> str:
        """``✅ Read app.py — 42``: the mark, the title and the output's first line, cut."""
        text = f"{TOOL_MARKS[self.state]} {cut(self.title, TITLE)}"
        first = (self.output or "").strip().split("\n", 1)[0]
        return f"{text} — {cut(first, OUTPUT)}" if first else text


def cut(text: str, limit: int) -> str:
    """``text`` on one line, in at most ``limit`` characters (``…`` ending a cut one)."""
    if limit < 1:
        raise ValueError(f"no room for text in a limit of {limit}")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def plan_line(entry: PlanEntry) -> str:
    return f"{PLAN_MARKS.get(entry.status, '⬜')} {cut(entry.content, TITLE)}"


def plan_lines(plan: PlanUpdated) -> list[str]:
    """The plan as checklist lines (at most ``SHOWN_PLAN`` entries), or its Markdown text."""
    text = plan.text or ""
    if len(text) > PLAN_TEXT:
        text = text[: PLAN_TEXT - 1] + "…"
    lines = [plan_line(e) for e in plan.entries[:SHOWN_PLAN]] or [text]
    if len(plan.entries) > SHOWN_PLAN:
        lines.append(f"… {len(plan.entries) - SHOWN_PLAN} more")
    return lines


def status_line(status: StatusChanged) -> str:
    detail = cut(status.detail, TITLE) if status.detail else ""
    if status.status == "retrying":
        return "🔁 Retrying" + (f" ({detail})" if detail else "")
    if status.status == "waiting_for_permission":
        return "🔐 Waiting for permission" + (f": {detail}" if detail else "")
    if status.status == "paused":
        return "⏸ Paused" + (f": {detail}" if detail else "")
    return "⚠️ " + (detail or status.status)


LineKind = Literal["status", "tool", "plan", "step", "reasoning"]


def activity_lines(activity: Activity) -> Iterator[tuple[LineKind, str]]:
    """What a chat's activity message shows, in the order every channel shows it, each line
    with its kind for the channel's marks: the status, the count of the tool calls not shown
    and the shown ones ("tool"), the plan's title ("plan", no text) and its entries ("step"),
    and the reasoning (all that is kept: a channel shows its end, as ``latest`` cuts it).
    """
    if activity.status is not None:
        yield "status", status_line(activity.status)
    if activity.hidden_tools:
        yield "tool", f"… {activity.hidden_tools} earlier tool calls"
    for tool in activity.shown_tools():
        yield "tool", tool.line
    if activity.plan is not None:
        yield "plan", ""
        for line in plan_lines(activity.plan):
            yield "step", line
    if activity.reasoning:
        yield "reasoning", activity.reasoning


def latest(text: str, shown: int) -> str:
    """The end of ``text`` (its last ``shown`` characters, stripped), ``…`` first when cut."""
    end = text[-shown:].strip()
    return "…" + end if len(text) > shown else end


def usage_line(usage: UsageReported | None) -> str | None:
    """``1,234 tokens (1,000 in, 234 out) · context 1,200 of 200,000 · 0.0123 USD``."""
    if usage is None:
        return None
    parts = []
    total = usage.total_tokens
    if total is None and usage.input_tokens is not None and usage.output_tokens is not None:
        total = usage.input_tokens + usage.output_tokens
    if total is not None:
        split = [
            f"{n:,} {label}"
            for n, label in ((usage.input_tokens, "in"), (usage.output_tokens, "out"))
            if n is not None
        ]
        parts.append(f"{total:,} tokens" + (f" ({', '.join(split)})" if split else ""))
    if usage.context_used is not None:
        size = f" of {usage.context_size:,}" if usage.context_size else ""
        parts.append(f"context {usage.context_used:,}{size}")
    if usage.cost is not None:
        parts.append(f"{usage.cost:.4g} {usage.currency or 'USD'}")
    return " · ".join(parts) or None


def with_usage(markdown: str, usage: UsageReported | None) -> str:
    """The reply's Markdown with the usage line at its end, when the runtime reported one."""
    line = usage_line(usage)
    return f"{markdown}\n\n_{line}_" if line else markdown


FAILURE_PREFIX = "⚠️ "


def reply_text(reply: Reply) -> str:
    """The Markdown a chat shows for a reply: a failure of plain text (not a command) gets the
    warning sign, a reply with usage its usage line (Telegram, Matrix).
    """
    if reply.category is not None and not reply.slash:
        return FAILURE_PREFIX + reply.text
    return with_usage(reply.text, reply.usage)


class Activity:
    def __init__(self, show_reasoning: bool = True) -> None:
        self.show_reasoning = show_reasoning
        self.tools: OrderedDict[str, Tool] = OrderedDict()
        self.earlier = 0  # tool calls no longer kept
        self.plan: PlanUpdated | None = None
        self.reasoning = ""
        self.status: StatusChanged | None = None

    @property
    def empty(self) -> bool:
        return not (self.tools or self.plan or self.reasoning or self.status)

    @property
    def worth_a_message(self) -> bool:
        """Enough to post a message of its own: a wait for permission alone is not (the
        permission request says it already).
        """
        waiting = self.status is None or self.status.status == "waiting_for_permission"
        return not (self.empty or (waiting and not (self.tools or self.plan or self.reasoning)))

    def apply(self, event: RuntimeEvent) -> bool:
        """Fold one event in; True when what a channel shows changed."""
        if isinstance(event, StatusChanged):
            status = event if event.status in _SHOWN_STATUSES else None
            changed = status != self.status
            self.status = status
            return changed
        if isinstance(event, ToolStart):
            self._tool(event.tool_id, Tool(event.title or "tool", event.kind))
        elif isinstance(event, ToolRunning):
            tool = self._tool(event.tool_id, Tool(event.detail or "tool"))
            tool.state = "running"
        elif isinstance(event, ToolEnd):
            tool = self._tool(event.tool_id, Tool("tool"))
            tool.state, tool.output = event.status, event.output
        elif isinstance(event, PlanUpdated):
            self.plan = event if event.entries or event.text else None
        elif isinstance(event, ReasoningDelta):
            if not self.show_reasoning:
                return False
            self.reasoning = (self.reasoning + event.text)[-MAX_REASONING:]
        else:
            return False
        return self.progress() or True

    def progress(self) -> bool:
        """The agent went on (text, tools): a wait for permission is over."""
        if self.status is not None and self.status.status == "waiting_for_permission":
            self.status = None
            return True
        return False

    def finish(self) -> None:
        """The turn is over: no status stays."""
        self.status = None

    def shown_tools(self) -> list[Tool]:
        return list(self.tools.values())[-SHOWN_TOOLS:]

    @property
    def hidden_tools(self) -> int:
        return self.earlier + max(0, len(self.tools) - SHOWN_TOOLS)

    def _tool(self, tool_id: str, new: Tool) -> Tool:
        tool = self.tools.get(tool_id)
        if tool is None:
            tool = self.tools[tool_id] = new
            if len(self.tools) > MAX_TOOLS:
                self.tools.popitem(last=False)
                self.earlier += 1
        return tool


class LiveActivity(ABC):
    """An activity shown in one message of a channel, changed as events come: a loop shows
    the latest state at the channel's pace; ``finish`` shows the last one.
    """

    def __init__(self, show_reasoning: bool) -> None:
        self.activity = Activity(show_reasoning)
        self._dirty = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._showing: asyncio.Future[None] | None = None
        self._touched = False  # changed at least once: until then nothing is shown

    def update(self, event: RuntimeEvent) -> None:
        if self.activity.apply(event):
            self._changed()

    def progress(self) -> None:
        if self.activity.progress():
            self._changed()

    async def finish(self) -> None:
        """The turn is over: the last change, without a status (or no message at all)."""
        await self.aclose()
        self.activity.finish()
        if self._touched:  # else nothing was shown, and there is nothing to show (most turns)
            await self._show(final=True)

    def cancel(self) -> None:
        """The input is over without a final reply: no more changes."""
        if self._loop is not None:
            self._loop.cancel()

    async def aclose(self) -> None:
        if self._loop is not None:
            self._loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop
            self._loop = None
        if self._showing is not None:
            with contextlib.suppress(Exception):
                await self._showing

    def _changed(self) -> None:
        self._touched = True
        self._dirty.set()
        if self._loop is None:
            self._loop = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            await self._pace()
            self._dirty.clear()
            # Shielded: stopping must not abort a post half-way (its message would be lost).
            self._showing = asyncio.ensure_future(self._show())
            await asyncio.shield(self._showing)

    @abstractmethod
    async def _pace(self) -> None:
        """Wait until the channel may change the message again."""

    @abstractmethod
    async def _show(self, final: bool = False) -> None:
        """Post, change or delete the message for the current state."""
