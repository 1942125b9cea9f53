"""A conversation's runtime session (an ACP session id, a pi session file) kept in the
gateway's store, so that a restarted gateway resumes it instead of starting afresh.
"""

from __future__ import annotations

import logging

from ..state import StateStore, StoreUnavailable

log = logging.getLogger("slashgate.runtimes")


class KeptSessions:
    """``store`` is the gateway's (``Runtime.use_store``); without one nothing is kept."""

    def __init__(self, area: str) -> None:
        self.area = area
        self.store: StateStore | None = None

    def _key(self, conversation: str) -> str:
        return f"{self.area}:session:{conversation}"

    async def get(self, conversation: str) -> str | None:
        if self.store is None:
            return None
        try:
            kept = await self.store.get(self._key(conversation))
        except StoreUnavailable as exc:
            log.warning("no kept %s session for %s: %s", self.area, conversation, exc)
            return None
        return kept if isinstance(kept, str) else None

    async def set(self, conversation: str, session: str | None) -> None:
        """Keep ``session`` for the conversation; None forgets it (``/new``)."""
        if self.store is None:
            return
        try:
            if session is None:
                await self.store.delete(self._key(conversation))
            else:
                await self.store.set(self._key(conversation), session)
        except StoreUnavailable as exc:
            log.warning("%s session of %s not kept: %s", self.area, conversation, exc)
