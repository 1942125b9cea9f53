"""``Idempotency-Key`` on ``POST /v1/messages``: the first request with a key is journaled and
its answer kept under the key; a repeat gets that answer (or waits for it), never a second run.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from gateway.api import Channel, Entry, StoreUnavailable
from gateway.store import BoundedTTLMap

from .answer import stored_answer
from .errors import ApiError
from .settings import WebhookSettings

log = logging.getLogger("slashgate.webhook")


@dataclass(frozen=True, slots=True)
class Idempotency:
    key: str
    fingerprint: str  # of the request body: the same key with another body is refused

    @property
    def claim(self) -> str:
        return f"webhook:idempotency:{self.key}"


def _failed() -> ApiError:
    return ApiError(
        409,
        "idempotency_failed",
        "the first request with this Idempotency-Key failed; retry with a new key",
    )


def _unavailable() -> ApiError:
    return ApiError(503, "unavailable", "the gateway's store is unavailable; retry")


class Keys:
    """The keys' answers: kept in the gateway's store, and awaited here while being made."""

    def __init__(self, channel: Channel[WebhookSettings]) -> None:
        self.gateway, self.settings, self.name = channel.gateway, channel.settings, channel.name
        # Answers still being made here, by key: a repeat waits for the first one's answer.
        self._running: BoundedTTLMap[asyncio.Future[dict[str, Any]]] = BoundedTTLMap(
            self.settings.idempotency_size, self.settings.idempotency_ttl
        )

    async def claim(
        self, conversation: str, idempotency: Idempotency, record: dict[str, Any]
    ) -> Entry | None:
        """Journal a request that has an Idempotency-Key (without one, nothing could fetch
        its answer after a crash); None when the key was used before.
        """
        try:
            entry = await self.gateway.accept(
                self.name,
                conversation,
                record,
                claim=idempotency.claim,
                value={"fingerprint": idempotency.fingerprint},
            )
        except StoreUnavailable as exc:
            log.warning("cannot journal a request: %s", exc)
            raise _unavailable() from None
        if entry is not None:
            self._running.set(idempotency.key, asyncio.get_running_loop().create_future())
        return entry

    async def store(self, idempotency: Idempotency, body: dict[str, Any]) -> None:
        value = await stored_answer(idempotency.fingerprint, body)
        await self.gateway.store.remember(idempotency.claim, value, self.settings.idempotency_ttl)
        first = self._running.pop(idempotency.key)
        if first is not None and not first.done():
            first.set_result(body)

    async def replay(self, idempotency: Idempotency) -> dict[str, Any]:
        """The first answer for the key: stored, or awaited while the first request runs (here,
        or on another replica, or recovered after a restart).
        """
        held = await self._held(idempotency)
        if "answer" in held:
            return dict(held["answer"])
        first = self._running.get(idempotency.key)
        if first is not None:
            return await asyncio.shield(first)
        deadline = asyncio.get_running_loop().time() + self._patience
        delay = 0.02
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.5)
            held = await self._held(idempotency)
            if "answer" in held:
                return dict(held["answer"])
        raise ApiError(
            409, "idempotency_pending", "the first request with this Idempotency-Key still runs"
        )

    @property
    def _patience(self) -> float:
        """How long a repeat waits for the first request's answer: its whole turn at most."""
        return self.settings.run_timeout + 2 * self.settings.cancel_grace

    async def _held(self, idempotency: Idempotency) -> dict[str, Any]:
        try:
            held = await self.gateway.store.recall(idempotency.claim)
        except StoreUnavailable:
            raise _unavailable() from None
        if held is None:
            raise _failed()
        if held.get("fingerprint") != idempotency.fingerprint:
            raise ApiError(
                422, "idempotency_mismatch", "Idempotency-Key was already used with another body"
            )
        return dict(held)

    async def forget(self, idempotency: Idempotency, entry: Entry) -> None:
        """The first request failed (a bug, or it was cancelled): its key may be used again."""
        first = self._running.pop(idempotency.key)
        if first is not None and not first.done():
            first.set_exception(_failed())
            first.exception()  # mark retrieved: nobody may be waiting
        try:
            await self.gateway.store.forget(idempotency.claim)
        except StoreUnavailable:
            log.warning("Idempotency-Key of a failed request not forgotten")
        await self.gateway.done(entry)
