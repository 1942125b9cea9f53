"""Helpers shared by the runtimes that run an agent as a child process over stdio."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import SecretStr

_CHUNK = 64 * 1024
_LINE = 2000  # longest stderr line logged, in characters


def program(command: Sequence[str]) -> list[str]:
    """The command line with a relative program path made absolute: the child starts in its
    own working directory, where a path relative to the gateway's would not resolve.
    """
    first, *rest = command
    if os.sep in first and not os.path.isabs(first):
        first = str(Path(first).resolve())
    return [first, *rest]


def revealed(env: Mapping[str, SecretStr]) -> dict[str, str]:
    """The configured environment of a child, in clear: only for the call that starts it."""
    return {name: value.get_secret_value() for name, value in env.items()}


class StderrPipe:
    """A child's stderr, read until EOF so that a chatty agent never blocks on a full pipe.

    A pipe of its own rather than the subprocess's: that one shares the (large) stdout buffer
    limit, so nothing would be read from it until megabytes had piled up in memory. Lines go to
    the debug log only, cut to a sane length: an agent may print anything there.
    """

    def __init__(self) -> None:
        self._read, self.child_fd = os.pipe()

    def started(self) -> None:
        """The child has its copy of the write end: close ours, so that EOF comes with its exit."""
        os.close(self.child_fd)
        self._file = os.fdopen(self._read, "rb", buffering=0)

    async def drain(self, log: logging.Logger, label: str) -> None:
        """Read until EOF (after ``started``), logging each line."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), self._file
        )
        try:
            pending = b""
            while chunk := await reader.read(_CHUNK):
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > _CHUNK:
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    _log(log, label, line)
            if pending:
                _log(log, label, pending)
        finally:
            # The transport closes the pipe once the loop stops watching it. Closing the file
            # under a watching loop (on cancel) would leave the loop watching the fd number,
            # which the next pipe gets: that one would never be read.
            transport.close()

    def close(self) -> None:
        """Close both ends when the child could not be started."""
        for fd in (self._read, self.child_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def _log(log: logging.Logger, label: str, line: bytes) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s stderr: %s", label, line.decode("utf-8", "replace")[:_LINE])
