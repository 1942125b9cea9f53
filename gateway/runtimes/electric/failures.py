"""Failures to read the entities' streams, logged when they start and when they end rather
than at each retry: each open conversation's reader tries again after ``BACKOFF_FIRST``
seconds, doubling up to ``BACKOFF_MAX``, for as long as it fails (a server down for an hour
logged a warning per conversation every 5 s).

- The server's outage (it cannot be reached, times out, or answers 5xx): one warning when
  the first stream fails, one line when every stream that failed is read again.
- A stream's own failure (a 4xx, a body that is not a stream's, a bug): one warning for
  that stream, and one line when it is read again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import aiohttp

from .wire import ElectricError

log = logging.getLogger("slashgate.electric")

BACKOFF_FIRST, BACKOFF_MAX = 0.1, 5.0  # seconds between a reader's tries


def _outage(exc: BaseException) -> bool:
    if isinstance(exc, ElectricError):
        return exc.status >= 500
    return isinstance(exc, aiohttp.ClientError | TimeoutError)


class StreamFailures:
    def __init__(self, shown: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._shown = shown  # the server, as logged
        self._clock = clock
        self._outage: set[str] = set()  # streams failing for the server's reasons
        self._since = 0.0  # when the outage began
        self._own: set[str] = set()  # streams failing for a reason of their own

    def failed(self, stream: str, exc: BaseException) -> None:
        """Reading ``stream`` failed with ``exc``; the reader tries again."""
        if _outage(exc):
            self._own.discard(stream)
            if not self._outage:
                self._since = self._clock()
                log.warning(
                    "cannot read the streams of the Electric Agents server at %s: %s; each "
                    "open conversation tries again every %g s at most, quietly until it works",
                    self._shown,
                    _why(exc),
                    BACKOFF_MAX,
                )
            self._outage.add(stream)
        elif stream not in self._own:
            self._outage.discard(stream)
            self._own.add(stream)
            log.warning(
                "reading %s failed: %s; tried again every %g s at most, quietly until it works",
                stream,
                _why(exc),
                BACKOFF_MAX,
                exc_info=exc if not isinstance(exc, ElectricError | ValueError) else None,
            )

    def read(self, stream: str) -> None:
        """``stream`` was read: the end of its failure, and of the outage with the last one."""
        if stream in self._own:
            self._own.discard(stream)
            log.warning("reading %s works again", stream)
        if stream in self._outage:
            self._outage.discard(stream)
            if not self._outage:
                log.warning(
                    "the streams of the Electric Agents server at %s are read again, after %.0f s",
                    self._shown,
                    self._clock() - self._since,
                )

    def forget(self, stream: str) -> None:
        """Nobody reads ``stream`` any more (its conversation closed)."""
        self._own.discard(stream)
        self._outage.discard(stream)


def _why(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
