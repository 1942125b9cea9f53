"""How a platform request that must arrive is tried again after a transient failure.

A bounded number of attempts; waits that double from ``base`` up to ``cap``, each drawn at
random in the upper half of its range (many replies failing together do not come back
together); no retry starts more than ``within`` seconds after the first failure. Flood control
(HTTP 429) is not this: the platform says how long to wait, and that is waited.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger("slashgate.backoff")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    attempts: int = 5  # in all, the first one included
    base: float = 0.5  # seconds: the longest first wait
    cap: float = 8.0  # seconds: the longest wait
    within: float = 20.0  # seconds after the first failure; no retry starts later

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0: the first retry)."""
        ceiling = min(self.cap, self.base * 2**retry)
        return random.uniform(ceiling / 2, ceiling)

    def allows(self, since_first_failure: float) -> bool:
        """A retry may start this many seconds after the first failure."""
        return since_first_failure <= self.within


async def retrying(
    send: Callable[[], Awaitable[T]],
    transient: Callable[[Exception], str | None],
    policy: Backoff,
) -> T:
    """``send()``, and again after each failure ``transient`` describes (None: a failure that
    another attempt would not cure) while ``policy`` allows; then the last failure is raised.
    """
    loop = asyncio.get_running_loop()
    first_failure: float | None = None
    for retry in range(policy.attempts - 1):
        try:
            return await send()
        except Exception as exc:
            reason = transient(exc)
            first_failure = loop.time() if first_failure is None else first_failure
            delay = policy.delay(retry)
            if reason is None or not policy.allows(loop.time() + delay - first_failure):
                raise
            log.info("%s: trying again in %.1f s", reason, delay)
        await asyncio.sleep(delay)
    return await send()
