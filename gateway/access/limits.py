"""Per-sender limits: a token bucket of inputs (``sender_rate`` a minute, ``sender_burst`` at
once) and a cap on one sender's inputs in the gateway at once, across conversations. At most
``size`` senders are remembered, the least recently seen forgotten first. With a Redis store
the buckets are Redis's, shared by the replicas (``SharedBuckets``); the cap is per process.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from ..state import StoreUnavailable


@dataclass(slots=True)
class _Sender:
    tokens: float
    at: float  # when ``tokens`` was counted
    told_until: float = 0.0  # the sender was told to wait until then: not again before
    inside: int = 0  # inputs in the gateway now


@dataclass(frozen=True, slots=True)
class Over:
    """An input over the limit: the whole seconds to wait, and whether to say so (once per
    window; the inputs after it in the same window are dropped without a word).
    """

    retry: int
    tell: bool


class Buckets(Protocol):
    async def take(self, sender: str) -> float | None:
        """A token of ``sender``'s bucket (None), or the tokens left (under 1); raises when
        the shared store cannot answer (the local bucket serves then).
        """


class SenderLimits:
    def __init__(
        self,
        per_minute: float,
        burst: int,
        max_inside: int,
        size: int = 10_000,
        shared: Buckets | None = None,
    ) -> None:
        self.rate = per_minute / 60.0  # tokens a second; 0: no bucket
        self.burst = max(1, burst)
        self.max_inside = max_inside  # 0: no cap
        self.size = size
        self.shared = shared
        self._senders: OrderedDict[str, _Sender] = OrderedDict()
        # Read per input: without limits no sender is counted, in or out.
        self.active = self.rate > 0 or self.max_inside > 0

    async def take(self, sender: str, now: float | None = None) -> Over | None:
        """Count an input of ``sender`` in (None), or say it is over the limit. An input
        counted in must be ``leave``-d when it is done.
        """
        now = time.monotonic() if now is None else now
        state = self._sender(sender, now)
        full = self.max_inside > 0 and state.inside >= self.max_inside
        tokens = 1.0
        if self.rate > 0 and not full:
            tokens = await self._tokens(sender, state, now)
        if tokens >= 1 and not full:
            state.inside += 1
            return None
        wait = (1 - tokens) / self.rate if self.rate > 0 and tokens < 1 else 1.0
        retry = max(1, math.ceil(wait))
        tell = now >= state.told_until
        if tell:
            state.told_until = now + retry
        return Over(retry, tell)

    async def _tokens(self, sender: str, state: _Sender, now: float) -> float:
        """The tokens the sender had (one is taken when there was one)."""
        if self.shared is not None:
            try:
                left = await self.shared.take(sender)
            except (StoreUnavailable, TimeoutError):
                pass  # this replica's own bucket meanwhile
            else:
                return 1.0 if left is None else left
        state.tokens = min(self.burst, state.tokens + (now - state.at) * self.rate)
        state.at = now
        if state.tokens < 1:
            return state.tokens
        state.tokens -= 1
        return 1.0

    def _sender(self, sender: str, now: float) -> _Sender:
        state = self._senders.get(sender)
        if state is None:
            state = self._senders[sender] = _Sender(float(self.burst), now)
            while len(self._senders) > self.size:
                self._senders.popitem(last=False)
        else:
            self._senders.move_to_end(sender)
        return state

    def leave(self, sender: str) -> None:
        state = self._senders.get(sender)
        if state is not None and state.inside > 0:
            state.inside -= 1
