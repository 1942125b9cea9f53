"""What the agent does while it answers, as one compact message edited in place: a status
line, the last tool calls, the plan as a checklist and the reasoning in an expandable
(collapsed) quote. It is sent with the first event and edited (paced per chat) as the turn
goes on; at the end it keeps what the turn did, or goes when nothing is left to show.
"""

from __future__ import annotations

import logging
from functools import partial

from aiogram.exceptions import TelegramAPIError, TelegramForbiddenError

from channels.activity import Activity, LiveActivity, activity_lines, latest
from contract import utf16_len, utf16_prefix
from gateway.pacing import previewing

from .delivery import Target, edit_chunk, persistently, send_chunk
from .outbox import Outbox
from .render import LIMIT, Chunk, escape

log = logging.getLogger("slashgate.telegram")

REASONING_SHOWN = 1000  # characters of the latest reasoning in the quote


def activity_chunk(activity: Activity) -> Chunk | None:
    """The message for ``activity`` (HTML and plain); None when there is nothing to show."""
    html: list[str] = []
    plain: list[str] = []

    def add(markup: str, text: str) -> None:
        html.append(markup)
        plain.append(text)

    for kind, line in activity_lines(activity):
        if kind == "status":
            add(f"<i>{escape(line)}</i>", line)
        elif kind == "plan":
            add("📋 <b>Plan</b>", "📋 Plan")
        elif kind == "reasoning":
            thought = latest(line, REASONING_SHOWN)
            add(f"<blockquote expandable>💭 {escape(thought)}</blockquote>", f"💭 {thought}")
        else:
            add(escape(line), line)
    if not html:
        return None
    text = "\n".join(plain)
    if utf16_len(text) > LIMIT:  # astral characters count twice: the text alone, cut
        text = text[: utf16_prefix(text, LIMIT - 1)] + "…"
        return Chunk(escape(text), text)
    return Chunk("\n".join(html), text)


class ActivityMessage(LiveActivity):
    def __init__(self, outbox: Outbox, target: Target) -> None:
        super().__init__(outbox.show_reasoning)
        self.outbox = outbox
        self.target = target
        self.message_id: int | None = None
        self._shown: Chunk | None = None
        self._gone = False  # the chat refuses the bot (blocked, removed): stop trying

    async def _pace(self) -> None:
        await self.outbox.throttle.wait(str(self.target.chat_id))

    async def _show(self, final: bool = False) -> None:
        if final:
            await self._put(final=True)
        else:
            with previewing():  # under pressure the final replies go first
                await self._put()

    async def _put(self, final: bool = False) -> None:
        chunk = activity_chunk(self.activity)
        if self._gone or chunk == self._shown:
            return
        if self.message_id is None and not self.activity.worth_a_message:
            return
        bot = self.outbox.bot
        try:
            if chunk is None:
                if self.message_id is not None:
                    await bot.delete_message(
                        chat_id=self.target.chat_id, message_id=self.message_id
                    )
                    self.message_id = None
            elif self.message_id is None:
                message = await send_chunk(bot, self.target, chunk, quote=True)
                self.message_id = message.message_id
            else:
                edit = partial(edit_chunk, bot, self.target, self.message_id, chunk)
                await (persistently(edit) if final else edit())
            self._shown = chunk
        except TelegramForbiddenError:
            self._gone = True  # the final reply says so, once
        except TelegramAPIError as exc:  # best effort: the reply itself still goes
            log.warning("activity not shown: %s", exc.message)
