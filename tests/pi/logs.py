"""Waiting for a log line: tests await it instead of sleeping."""

from __future__ import annotations

import asyncio
import logging


class LogSeen(logging.Handler):
    """Sets ``seen`` once a record whose message contains ``text`` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()
