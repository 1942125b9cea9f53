"""The stderr pipe that both stdio runtimes (ACP, pi) read their child's stderr through."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator

import pytest

from gateway.runtimes.stdio import StderrPipe
from tests.pi.logs import LogSeen

WAIT = 20.0


@pytest.fixture
def log() -> Iterator[logging.Logger]:
    logger = logging.getLogger("slashgate.test.stderr")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the chatty child's megabytes stay out of the test report
    yield logger
    logger.handlers.clear()


async def test_a_cancelled_drain_leaves_the_next_pipe_readable(log: logging.Logger) -> None:
    # A drain cancelled while its child still holds stderr open (a process closed before its
    # stderr reached EOF): the fd number it frees goes to the next child's pipe, which must
    # still be read, or a chatty child blocks on a full pipe.
    ready = LogSeen("ready")
    log.addHandler(ready)
    first = StderrPipe()
    quiet = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('ready\\n'); sys.stderr.flush(); sys.stdin.read()",
        stdin=asyncio.subprocess.PIPE,
        stderr=first.child_fd,
    )
    first.started()
    drain = asyncio.ensure_future(first.drain(log, "quiet"))
    try:
        await asyncio.wait_for(ready.seen.wait(), WAIT)
        drain.cancel()
        await asyncio.wait({drain})

        second = StderrPipe()
        chatty = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; sys.stderr.write(('y' * 999 + '\\n') * 4000)",
            stderr=second.child_fd,
        )
        second.started()
        await asyncio.wait_for(second.drain(log, "chatty"), WAIT)
        assert await asyncio.wait_for(chatty.wait(), WAIT) == 0
    finally:
        assert quiet.stdin is not None
        quiet.stdin.close()
        await asyncio.wait_for(quiet.wait(), WAIT)
