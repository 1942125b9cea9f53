"""``python -m slashgate ...`` for tests, forked from a process that imported slashgate once.

Each start of a gateway process with Telegram used to pay about 3.5 s of CPU importing
aiogram and the rest (docs/testing.md); the crash and replica tests start dozens. A zygote, one
per test process and started at its first use, imports all that once, then forks a child per
start. The child is made to look like a fresh ``python -m slashgate`` process: the argv, the
environment and the working directory asked for, its own stdin/stdout/stderr (the pipes the
test reads), no other file descriptor, the interpreter's default signal dispositions (the
zygote sets none), and a normal interpreter exit (atexit, flushing). The test gets a
``Forked`` process with the API of ``asyncio.subprocess.Process`` that it uses: ``pid``,
``stdout``/``stderr``, ``returncode``, ``wait()``, ``send_signal()``/``kill()``/
``terminate()`` (through a pidfd, so a signal never reaches a recycled pid). The zygote reaps
its children and reports each exit status; SIGKILL is a real SIGKILL of the child.

What a fork cannot give is a process whose start-up is real: tests/test_webhook_e2e.py and
the other ``serve_subprocess`` tests keep starting ``slashgate serve`` from scratch.
``TEST_ZYGOTE=0`` starts every process from scratch; so does a request whose
Python start-up settings (``PYTHON*`` and locale variables) differ from the zygote's.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ENABLED = os.environ.get("TEST_ZYGOTE", "1") != "0" and hasattr(os, "pidfd_open")
# What Python reads from the environment while it starts (stdio encoding and buffering, hash
# seed, paths, ...): a child asking for other values must really start.
_STARTUP = ("PYTHON", "LANG", "LC_")
_MESSAGE = 1 << 20  # the largest request: an argv and an environment


def _startup(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_STARTUP)}


# --- the zygote's side ------------------------------------------------------------------


def _preload() -> None:
    """What the gateways of the tests that fork import: the CLI and server, the channels on
    by default and Telegram (aiogram: most of the cost), the Redis store. Anything else a
    child imports when it needs it, as a fresh process would.
    """
    import importlib

    for module in (
        "slashgate.cli",
        "slashgate.server",
        "channels.webhook.channel",
        "channels.webchat.channel",
        "channels.telegram.channel",
        "gateway.runtimes.embedded",
        "gateway.state.redis",
    ):
        importlib.import_module(module)


@dataclass
class _Request:
    module: str
    args: list[str]
    env: dict[str, str]
    cwd: str


def serve(control_fd: int) -> _Request | None:
    """The zygote's loop: fork a child per request on ``control_fd``. Returns only in a child
    (its request, to run) or, with None, once the test process has gone.
    """
    _preload()
    # A fork copies only the forking thread: a thread started by an import would be missing
    # in every child (and could hold a lock there forever).
    assert threading.active_count() == 1, threading.enumerate()
    # As prefork servers do: the collector leaves what was imported alone, so a child's
    # collections (its exit's too) do not touch, and so copy, every page of it: a child's
    # `slashgate slack manifest` took 1.6 s of CPU without this, 0.15 s with it.
    gc.freeze()
    control = socket.socket(fileno=control_fd)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd: (pid, where to report)
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                message, fds, _, _ = socket.recv_fds(control, _MESSAGE, 4)
                if not message:  # the test process ended: so do its children
                    for pidfd, (pid, _) in children.items():
                        with contextlib.suppress(ProcessLookupError):
                            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    return None
                request = _Request(**json.loads(message))
                *stdio, reply_fd = fds
                reply = socket.socket(fileno=reply_fd)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    control.close()
                    reply.close()
                    for pidfd, (_, other) in children.items():
                        other.close()
                        os.close(pidfd)
                    _become(request, stdio)
                    return request
                for fd in stdio:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                # The pidfd goes to the test too: its signals reach this child or no one.
                with contextlib.suppress(OSError):  # a test gone: its child is reaped all the same
                    socket.send_fds(reply, [b"%d" % pid], [pidfd])
                children[pidfd] = (pid, reply)
                selector.register(pidfd, selectors.EVENT_READ)
            else:
                pidfd = int(key.fd)
                selector.unregister(pidfd)
                pid, reply = children.pop(pidfd)
                _, status, usage = os.wait4(pid, 0)
                os.close(pidfd)
                report = {"status": status, "cpu": usage.ru_utime + usage.ru_stime}
                with contextlib.suppress(OSError):
                    reply.send(json.dumps(report).encode())
                reply.close()


def _become(request: _Request, stdio: list[int]) -> None:
    """In the child: the process that ``python -m module args`` would have started."""
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    sys.path[0] = request.cwd  # as -m makes it: the working directory first
    sys.argv = ["-m", *request.args]  # runpy puts the module's file first


def main() -> None:
    """``python -c 'from tests.zygote import main; main()' FD``: the zygote, then a child."""
    request = serve(int(sys.argv[1]))
    if request is not None:
        import runpy

        runpy.run_module(request.module, run_name="__main__", alter_sys=True)


# --- the test's side --------------------------------------------------------------------


class Forked:
    """A zygote's child, as the tests use ``asyncio.subprocess.Process``."""

    def __init__(
        self,
        pid: int,
        pidfd: int,
        reply: socket.socket,
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
    ) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._exited = asyncio.ensure_future(self._report(reply))

    async def _report(self, reply: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        data = b""
        try:
            while chunk := await loop.sock_recv(reply, 4096):
                data += chunk
        finally:
            reply.close()
        report = json.loads(data)
        global forked_cpu
        forked_cpu += report["cpu"]
        self.returncode = os.waitstatus_to_exitcode(report["status"])
        os.close(self._pidfd)

    async def wait(self) -> int:
        await asyncio.shield(self._exited)
        assert self.returncode is not None
        return self.returncode

    async def communicate(self) -> tuple[bytes | None, bytes | None]:
        """All of stdout and stderr (None for one not piped), once the child exited."""

        async def read(reader: asyncio.StreamReader | None) -> bytes | None:
            return None if reader is None else await reader.read()

        out, err = await asyncio.gather(read(self.stdout), read(self.stderr))
        await self.wait()
        return out, err

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        signal.pidfd_send_signal(self._pidfd, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class _Zygote:
    def __init__(self) -> None:
        control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from tests.zygote import main; main()", str(theirs.fileno())],
            cwd=ROOT, env=env, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        theirs.close()
        self.control = control
        self.startup = _startup(env)


_zygote: _Zygote | None = None
# CPU seconds of the children that exited, which the zygote waited for, not this process:
# for tests/cpu_times.py.
forked_cpu = 0.0


def stop() -> None:
    """Ends the zygote, if one was started: it kills what is left of its children and exits."""
    global _zygote
    if _zygote is not None:
        _zygote.control.close()
        _zygote.process.wait()
        _zygote = None


async def _pipe(loop: asyncio.AbstractEventLoop) -> tuple[asyncio.StreamReader, int]:
    read, write = os.pipe()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read, "rb", 0)
    )
    return reader, write


async def _received(reply: socket.socket) -> tuple[bytes, list[int]]:
    """What the zygote sent first on ``reply``: the child's pid and its pidfd."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(reply, ready.set_result, None)
    try:
        await ready
    finally:
        loop.remove_reader(reply)
    message, fds, _, _ = socket.recv_fds(reply, 64, 1)
    return message, fds


async def start_python(
    module: str,
    *args: str,
    env: Mapping[str, str],
    cwd: Path,
    stdout: int | None = None,
    stderr: int | None = None,
) -> Forked | asyncio.subprocess.Process:
    """``python -m module args`` in ``cwd`` with exactly ``env``, forked from the zygote when
    it can be; ``stdout``/``stderr`` as for ``asyncio.create_subprocess_exec`` (None, PIPE,
    or STDOUT for stderr).
    """
    global _zygote
    if ENABLED and _zygote is None:
        _zygote = _Zygote()
    if _zygote is None or _startup(env) != _zygote.startup:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, *args, cwd=cwd, env=dict(env),
            stdout=stdout, stderr=stderr,
        )  # fmt: skip
    loop = asyncio.get_running_loop()
    readers: list[asyncio.StreamReader | None] = [None, None]
    stdio = [0, 1, 2]
    ours: list[int] = []  # the write ends, closed here once the zygote has them
    if stdout == subprocess.PIPE:
        readers[0], stdio[1] = await _pipe(loop)
        ours.append(stdio[1])
    if stderr == subprocess.STDOUT:
        stdio[2] = stdio[1]
    elif stderr == subprocess.PIPE:
        readers[1], stdio[2] = await _pipe(loop)
        ours.append(stdio[2])
    reply, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    request: dict[str, Any] = {"module": module, "args": list(args), "env": dict(env)}
    request["cwd"] = str(cwd)
    try:
        socket.send_fds(_zygote.control, [json.dumps(request).encode()], [*stdio, theirs.fileno()])
    finally:
        theirs.close()
        for fd in ours:
            os.close(fd)
    reply.setblocking(False)
    message, fds = await _received(reply)
    if not message:
        raise RuntimeError("the test zygote did not start the child (see its stderr)")
    return Forked(int(message), fds[0], reply, *readers)
