"""Long polling: aiogram's dispatcher fetches the updates and hands them to the intake (no FSM:
the channel keeps no per-chat states). Telegram confirms an update only with the next
getUpdates call, so stopping confirms the ones handled so far.
"""

from __future__ import annotations

import asyncio
import logging

from aiogram import Bot, Dispatcher
from aiogram.exceptions import TelegramAPIError

from .intake import UPDATES, Intake

log = logging.getLogger("slashgate.telegram")

POLL_TIMEOUT = 25  # seconds a getUpdates call waits for news


class Polling:
    def __init__(self, bot: Bot, intake: Intake) -> None:
        self.bot = bot
        self.intake = intake
        self.dispatcher = Dispatcher(disable_fsm=True)
        self.dispatcher.update.outer_middleware(intake)
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Poll in the background; returns once the first getUpdates is under way, or raises
        what kept polling from starting.
        """
        self.intake.patient = True  # Telegram keeps an update until the next offset: wait
        await self.bot.delete_webhook(drop_pending_updates=False)  # getUpdates refuses otherwise
        started = asyncio.Event()
        self.dispatcher.startup.register(started.set)
        self._task = asyncio.create_task(
            self.dispatcher.start_polling(
                self.bot,
                polling_timeout=POLL_TIMEOUT,
                allowed_updates=list(UPDATES),
                handle_as_tasks=False,  # the intake makes the tasks (and keeps them)
                handle_signals=False,
                close_bot_session=False,
            )
        )
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({waiting, self._task}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():
            self._task.result()  # it failed to start: say why

    async def stop(self) -> None:
        task = self._task
        if task is not None and not task.done():
            # Not cancel(): aiogram stops its own polling tasks only when asked to stop.
            await self.dispatcher.stop_polling()
            await task

    async def confirm(self) -> None:
        """Tell Telegram the updates handled so far are done, so a restart does not redo them.
        Nothing to do when this replica never polled.
        """
        last = self.intake.last_update_id
        if self._task is None or last is None:
            return
        try:
            await self.bot.get_updates(offset=last + 1, limit=1, timeout=0)
        except TelegramAPIError as exc:
            log.warning("could not confirm the last updates: %s", exc.message)
