"""What the agent does while it answers, as one Slack message updated in place: context
blocks for the status, the last tool calls and the reasoning (shortened), a section with the
plan as a checklist. Posted with the first event, updated at most once per update interval,
and at the end it keeps what the turn did, or goes when nothing is left to show.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.activity import Activity, LiveActivity, plan_lines, status_line
from channels.text import shorten

from .messages import Messages
from .mrkdwn import SECTION_LIMIT, escape

REASONING_SHOWN = 300  # characters: Slack cannot fold a block, so the thoughts are shortened


def _context(text: str) -> dict[str, Any]:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": shorten(text, SECTION_LIMIT)}],
    }


def activity_blocks(activity: Activity) -> tuple[str, list[dict[str, Any]]] | None:
    """(notification text, blocks) for ``activity``; None when there is nothing to show."""
    blocks: list[dict[str, Any]] = []
    text: list[str] = []
    if activity.status is not None:
        line = status_line(activity.status)
        blocks.append(_context(f"_{escape(line)}_"))
        text.append(line)
    tools = [tool.line for tool in activity.shown_tools()]
    if activity.hidden_tools:
        tools.insert(0, f"… {activity.hidden_tools} earlier tool calls")
    if tools:
        blocks.append(_context("\n".join(escape(line) for line in tools)))
        text.extend(tools)
    plan = activity.plan
    if plan is not None:
        lines = plan_lines(plan)
        body = "\n".join(escape(line) for line in lines)
        # Escaping makes a line up to five times longer: 20 entries may pass a section's limit.
        section = shorten(f"*Plan*\n{body}", SECTION_LIMIT)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": section}})
        text.append("Plan")
    if activity.reasoning:
        thought = " ".join(activity.reasoning.split())
        if len(thought) > REASONING_SHOWN:
            thought = "…" + thought[-REASONING_SHOWN:]
        blocks.append(_context(f"💭 _{escape(thought)}_"))
    if not blocks:
        return None
    return " · ".join(text) or "💭", blocks


class ActivityPost(LiveActivity):
    def __init__(self, messages: Messages, show_reasoning: bool) -> None:
        super().__init__(show_reasoning)
        self.messages = messages
        self.ts: str | None = None  # "" when it went through a response_url: not updatable
        self._shown: tuple[str, list[dict[str, Any]]] | None = None
        self._last: float | None = None  # when it was last changed

    async def _pace(self) -> None:
        """chat.update is rate limited per channel: at most one change per update interval."""
        if self._last is not None:
            interval = self.messages.outbox.update_interval
            wait = self._last + interval - asyncio.get_running_loop().time()
            if wait > 0:
                await asyncio.sleep(wait)

    async def _show(self, final: bool = False) -> None:
        self._last = asyncio.get_running_loop().time()
        shown = activity_blocks(self.activity)
        if shown == self._shown or self.ts == "":
            return
        if self.ts is None:
            if shown is None or not self.activity.worth_a_message:
                return
            self.ts = await self.messages.post(shown[0], blocks=shown[1])
        elif shown is None:
            await self.messages.delete(self.ts)
            self.ts = None
        else:
            await self.messages.update(self.ts, shown[0], shown[1])
        self._shown = shown
