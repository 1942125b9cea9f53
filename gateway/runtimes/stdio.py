"""Helpers shared by the runtimes that run an agent as a child process over stdio."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import SecretStr

_CHUNK = 64 * 1024
_LINE = 2000  # longest stderr line logged, in characters
KILL_GRACE = 0.5  # seconds an agent's process group has between SIGTERM and SIGKILL
TAIL = 10  # last stderr lines kept, to say why an agent failed
TAIL_WAIT = 5.0  # seconds an ended agent's stderr has to reach EOF before it is quoted (only a
# process the agent started can hold it open that long; a loaded machine can take over 1 s)


def program(command: Sequence[str]) -> list[str]:
    """The command line with a relative program path made absolute, and each argument that is
    a relative path to a file where the gateway runs (a script): the child starts in its own
    working directory (the agent's workspace), where a path relative to the gateway's would
    not resolve.
    """
    first, *rest = command
    if os.sep in first and not os.path.isabs(first):
        first = os.path.abspath(first)  # not resolved: a venv's python is a link that must stay one
    return [first, *(_here(arg) for arg in rest)]


def _here(arg: str) -> str:
    if os.sep in arg and not os.path.isabs(arg) and os.path.isfile(arg):
        return os.path.abspath(arg)
    return arg


def missing_program(command: Sequence[str]) -> str | None:
    """None when the command's program can be run (on PATH, or the path given); else why not."""
    if shutil.which(command[0]) is None:
        return f"{command[0]} not found or not executable"
    return None


def revealed(env: Mapping[str, SecretStr]) -> dict[str, str]:
    """The configured environment of a child, in clear: only for the call that starts it."""
    return {name: value.get_secret_value() for name, value in env.items()}


async def spawn(*command: str, **kwargs: Any) -> asyncio.subprocess.Process:
    """Start an agent in a session, hence a process group, of its own (its id is the agent's
    pid): what it starts (tools, a re-executed copy of itself) stays in that group, so that
    ``end_group`` can end all of it. It is no longer in the gateway's terminal group either:
    a Ctrl-C reaches the gateway, which then ends its agents in order.
    """
    return await asyncio.create_subprocess_exec(*command, start_new_session=True, **kwargs)


async def end_group(process: asyncio.subprocess.Process, grace: float = KILL_GRACE) -> None:
    """End an agent started by ``spawn`` and everything in its group: SIGTERM to the group,
    then SIGKILL to it once the agent has exited or ``grace`` seconds have passed, whichever
    comes first (what the agent leaves running when it exits goes with it). Returns once the
    agent has exited: bounded by ``grace`` unless the kernel cannot kill it.
    """
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(exited(process), grace)
    _signal_group(process.pid, signal.SIGKILL)
    await exited(process)


async def exited(process: asyncio.subprocess.Process) -> None:
    """Return once the agent itself has exited. Not ``Process.wait``: that also waits for the
    agent's pipes to close, which a process it started (a tool, a relaunched copy) may hold
    open for ever. Where there is no pidfd (not Linux), it is ``Process.wait`` after all.
    """
    if process.returncode is not None:
        return
    try:
        await pid_exited(process.pid)
    except (AttributeError, OSError):  # no os.pidfd_open, or a kernel before 5.3
        await process.wait()


async def pid_exited(pid: int) -> None:
    """Return once process ``pid`` has exited (also one that is not the caller's child): its
    pidfd becomes readable then. A zombie nobody reaps counts as exited: it runs no more.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    loop.add_reader(fd, ready)
    try:
        await readable
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class StderrPipe:
    """A child's stderr, read until EOF so that a chatty agent never blocks on a full pipe.

    A pipe of its own rather than the subprocess's: that one shares the (large) stdout buffer
    limit, so nothing would be read from it until megabytes had piled up in memory. Lines go to
    the debug log, cut to a sane length: an agent may print anything there. The last few are
    kept, to say why the agent failed (``explain``).
    """

    def __init__(self) -> None:
        self._read, self.child_fd = os.pipe()
        self.tail: deque[str] = deque(maxlen=TAIL)
        self._eof = asyncio.Event()

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
                    self._line(log, label, line)
            if pending:
                self._line(log, label, pending)
        finally:
            self._eof.set()
            # The transport closes the pipe once the loop stops watching it. Closing the file
            # under a watching loop (on cancel) would leave the loop watching the fd number,
            # which the next pipe gets: that one would never be read.
            transport.close()

    def _line(self, log: logging.Logger, label: str, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace")[:_LINE]
        self.tail.append(line)
        log.debug("%s stderr: %s", label, line)

    async def explain(self, exc: BaseException, wait: float = TAIL_WAIT) -> None:
        """Add the last lines the (ended) child wrote to stderr to ``exc``, as a note: an
        agent that dies at start says why there (``ModuleNotFoundError: ...``), not in the
        protocol's ``Connection closed``. Waits for EOF at most ``wait`` seconds (a process the
        agent started may hold the pipe); a cancellation is left as it is.
        """
        if not isinstance(exc, Exception):
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), wait)
        if self.tail:
            lines = "\n".join(f"  {line}" for line in self.tail)
            exc.add_note(f"the agent's last lines on stderr:\n{lines}")

    def close(self) -> None:
        """Close both ends when the child could not be started."""
        for fd in (self._read, self.child_fd):
            try:
                os.close(fd)
            except OSError:
                pass
