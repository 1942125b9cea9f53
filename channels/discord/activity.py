"""What the agent does while it answers (status, the last tool calls, the plan, reasoning), as
one follow-up message changed in place at the sink's pace: posted with the first event worth
a message, and at the end it keeps what the turn did, or goes when nothing is left to show.
"""

from __future__ import annotations

import asyncio

from channels.activity import Activity, LiveActivity, activity_lines
from channels.text import shorten

from .messages import Messages
from .render import LIMIT

REASONING_SHOWN = 300  # characters of the latest reasoning shown


# Each kind of line (channels.activity.activity_lines) in small text; the plan's title not.
_LINES = {"status": "-# _{}_", "tool": "-# {}", "plan": "**Plan**", "step": "{}"}


def activity_text(activity: Activity) -> str | None:
    """The activity as Discord Markdown (small text for the lines); None when empty."""
    lines = [
        f"-# 💭 _{_thought(text)}_" if kind == "reasoning" else _LINES[kind].format(text)
        for kind, text in activity_lines(activity)
    ]
    return shorten("\n".join(lines), LIMIT) if lines else None


def _thought(reasoning: str) -> str:
    """The reasoning on one line, its last ``REASONING_SHOWN`` characters."""
    thought = " ".join(reasoning.split())
    return "…" + thought[-REASONING_SHOWN:] if len(thought) > REASONING_SHOWN else thought


class ActivityMessage(LiveActivity):
    def __init__(self, messages: Messages, interval: float, show_reasoning: bool) -> None:
        super().__init__(show_reasoning)
        self.messages = messages
        self.interval = interval
        self.message: int | None = None
        self._shown: str | None = None
        self._last: float | None = None  # when it was last changed

    async def _pace(self) -> None:
        if self._last is not None:
            wait = self._last + self.interval - asyncio.get_running_loop().time()
            if wait > 0:
                await asyncio.sleep(wait)

    async def _show(self, final: bool = False) -> None:
        self._last = asyncio.get_running_loop().time()
        shown = activity_text(self.activity)
        if shown == self._shown:
            return
        if self.message is None:
            if shown is None or not self.activity.worth_a_message:
                return
            self.message = await self.messages.follow_up(shown, self.messages.target.ephemeral)
        elif shown is None:
            await self.messages.delete_follow_up(self.message)
            self.message = None
        else:
            await self.messages.edit_follow_up(self.message, shown)
        self._shown = shown
