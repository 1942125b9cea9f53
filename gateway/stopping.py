"""Stopping a running turn: the runtime is asked to cancel it, and the turn's reading of its
stream is cancelled if the runtime does not end it within the grace period (/cancel, /new,
the interrupt policy, shutdown, a cancel taken by another replica, a lost turn lease).
"""

from __future__ import annotations

import asyncio
import logging

from .conversation import Conversation, RunState
from .settings import CoreSettings

log = logging.getLogger("slashgate.core")


class Stopper:
    def __init__(self, settings: CoreSettings) -> None:
        self._settings = settings

    async def stop_run(self, conv: Conversation) -> bool:
        """Cancel the run in progress, if any; True when one was running."""
        state = conv.run
        if state is None or state.task is None:
            return False
        await self._stop(conv, state)
        return True

    async def _stop(self, conv: Conversation, state: RunState) -> None:
        """Ask the runtime to cancel; past the grace period (one for the ask and the turn's
        end together), stop reading its stream. A turn still waiting for its session has
        nothing to cancel in the runtime: it stops at once.
        """
        state.stopping = True
        grace = self._settings.cancel_grace
        if conv.session is not None:
            try:
                async with asyncio.timeout(grace):
                    await self.cancel_runtime(conv)
                    await state.finished()
                return
            except TimeoutError:
                pass
        state.forced = True
        if state.task is not None:
            state.task.cancel()
        try:
            await asyncio.wait_for(state.finished(), grace)
        except TimeoutError:
            log.error("the turn in %s does not stop; leaving it behind", conv.key)

    async def cancel_runtime(self, conv: Conversation) -> None:
        if conv.session is None:
            return
        try:
            await asyncio.wait_for(conv.session.cancel(), self._settings.cancel_grace)
        except Exception:
            log.warning("runtime did not acknowledge cancel in %s", conv.key, exc_info=True)
