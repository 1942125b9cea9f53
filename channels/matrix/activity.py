"""What the agent does while it answers (status, the last tools, the plan, the reasoning) as
one notice edited in place, paced with the room's other edits; at the end it keeps what the
turn did, or goes (redacted) when nothing is left to show.
"""

from __future__ import annotations

import asyncio
import logging

from mautrix.errors import MatrixError

from channels.activity import Activity, LiveActivity, activity_lines, latest
from gateway.pacing import previewing

from .outbox import Outbox, Target
from .render import Chunk, render

log = logging.getLogger("slashgate.matrix")

REASONING_SHOWN = 1000  # characters of the latest reasoning


# Each kind of line (channels.activity.activity_lines); the reasoning is quoted.
_LINES = {"status": "*{}*", "tool": "{}", "plan": "📋 **Plan**", "step": "{}"}


def activity_markdown(activity: Activity) -> str | None:
    """The notice's Markdown; None when there is nothing to show."""
    lines = [
        f"> 💭 {' '.join(latest(text, REASONING_SHOWN).split())}"
        if kind == "reasoning"
        else _LINES[kind].format(text)
        for kind, text in activity_lines(activity)
    ]
    return "  \n".join(lines) if lines else None


class ActivityNotice(LiveActivity):
    def __init__(self, outbox: Outbox, target: Target) -> None:
        super().__init__(outbox.show_reasoning)
        self.outbox = outbox
        self.target = target
        self.event_id: str | None = None
        self._shown: Chunk | None = None
        self._last = 0.0

    async def _pace(self) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self._last + self.outbox.edit_interval - loop.time()))
        self._last = loop.time()

    async def _show(self, final: bool = False) -> None:
        if final:
            await self._put()
        else:
            with previewing():  # under pressure the final replies go first
                await self._put()

    async def _put(self) -> None:
        markdown = activity_markdown(self.activity)
        chunk = render(markdown)[0] if markdown is not None else None
        if chunk == self._shown:
            return
        if self.event_id is None and not self.activity.worth_a_message:
            return
        room = self.target.room_id
        try:
            if chunk is None:
                if self.event_id is not None:
                    await self.outbox.redact(room, self.event_id)
                    self.event_id = None
            elif self.event_id is None:
                self.event_id = await self.outbox.notice(room, chunk, self.target.relation())
            else:
                await self.outbox.edit(room, self.event_id, chunk)
            self._shown = chunk
        except (MatrixError, OSError) as exc:  # best effort: the reply itself still goes
            log.warning("activity not shown: %s", exc)
