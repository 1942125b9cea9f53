"""The processes of a Telegram load bench (bench/replicas.py, bench/stores.py): redis-server,
``slashgate serve`` replicas, fake Bot APIs (bench/fakebot.py) and load generators
(bench/loadgen.py), each a process of its own, so that each one's CPU time is read apart
(``/proc/<pid>/stat``) and none of the helpers shares the bench's event loop.

Nothing here imports the tests (pytest need not be installed): it runs from a checkout with
the project's dependencies on PYTHONPATH and a redis-server binary, found by
``SLASHGATE_REDIS_SERVER`` or on PATH.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "123456:BENCH-token_for-the-fake"
SECRET = "bench-secret-0123456789"
STARTUP = 120.0  # seconds: several gateways start at once on a small, busy machine
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def pin(pid: int, core: int | None) -> None:
    """Every thread of ``pid`` on ``core`` (threads it starts later inherit it)."""
    if core is None:
        return
    for task in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(task), {core})


def redis_binary(given: str | None = None) -> str | None:
    return given or os.environ.get("SLASHGATE_REDIS_SERVER") or shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Proc:
    """A child process that says on its stdout when it is ready; the rest is read and kept."""

    argv: list[str]
    ready: str  # the start of the line that says so
    cwd: Path = ROOT
    env: dict[str, str] | None = None
    stdin: bool = False
    line: str = ""  # the ready line
    output: list[str] = field(default_factory=list)
    process: asyncio.subprocess.Process | None = None
    _drain: asyncio.Task[None] | None = None

    async def start(self) -> str:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, cwd=self.cwd, env=self.env,
            stdin=asyncio.subprocess.PIPE if self.stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert self.process.stdout is not None
        while True:
            raw = await asyncio.wait_for(self.process.stdout.readline(), STARTUP)
            line = raw.decode(errors="replace")
            if not line:
                raise RuntimeError(f"{self.argv[:3]} exited:\n" + "".join(self.output[-40:]))
            self.output.append(line)
            if self.ready in line:
                self.line = line.strip()
                self._drain = asyncio.ensure_future(self._read())
                return self.line

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        async for raw in self.process.stdout:
            self.output.append(raw.decode(errors="replace"))

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def stop(self, kill: bool = False) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.returncode is None:
            process.kill() if kill else process.terminate()
        await asyncio.wait_for(process.wait(), STARTUP)
        if self._drain is not None:
            await self._drain


def redis_server(binary: str, folder: Path) -> Proc:
    argv = [
        binary, "--port", str(free_port()), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--dir", str(folder), "--daemonize", "no",
    ]  # fmt: skip
    return Proc(argv, "Ready to accept connections")


def redis_url(server: Proc) -> str:
    return f"redis://127.0.0.1:{server.argv[2]}/0"


def gateway(env: dict[str, str], tree: Path = ROOT) -> Proc:
    """``slashgate serve`` of the source ``tree`` on a free port; ``env``: SLASHGATE_*
    settings without the prefix.
    """
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    clean.update({f"SLASHGATE_{k.upper()}": v for k, v in env.items()})
    argv = [sys.executable, "-m", "slashgate", "serve", "--port", "0"]
    return Proc(argv, "slashgate listening on ", cwd=tree, env=clean)


def unpaced(tree: Path = ROOT) -> dict[str, str]:
    """Settings that turn the gateway's pacing under Telegram's limits off (the fakes take
    whatever comes), where the tree has it.
    """
    settings = (tree / "channels" / "telegram" / "settings.py").read_text(encoding="utf-8")
    if "telegram_rate_global" not in settings:
        return {}
    return {"telegram_rate_global": "0", "telegram_rate_private": "0", "telegram_rate_group": "0"}


# The load comes from strangers, in private chats and groups, faster than a person types: the
# benches measure the pipeline, so the access policy lets them all through (docs/access.md).
CHATS = ("telegram", "slack", "discord", "matrix")
OPEN_ACCESS = {
    **{f"{c}_{p}_policy": "open" for c in CHATS for p in ("dm", "group")},
    "sender_rate": "0",
    "sender_max_queued": "0",
}


def open_access(tree: Path = ROOT) -> dict[str, str]:
    """``OPEN_ACCESS``, where the tree has an access policy."""
    settings = (tree / "gateway" / "settings.py").read_text(encoding="utf-8")
    return dict(OPEN_ACCESS) if "sender_rate" in settings else {}


def url_of(gateway: Proc) -> str:
    return gateway.line.split()[-1]


class Fakes:
    """Fake Bot APIs, each a process: the replies counted over all of them."""

    def __init__(self, count: int) -> None:
        argv = [sys.executable, str(ROOT / "bench" / "fakebot.py")]
        self.procs = [Proc(argv, "listening ") for _ in range(count)]
        self.urls: list[str] = []
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        lines = await asyncio.gather(*(p.start() for p in self.procs))
        self.urls = [f"http://127.0.0.1:{line.split()[-1]}" for line in lines]
        self._session = aiohttp.ClientSession()

    async def counts(self) -> tuple[int, float]:
        """(sendMessage calls over all fakes, when the latest came: time.monotonic)."""
        assert self._session is not None
        sent, last = 0, 0.0
        for url in self.urls:
            async with self._session.get(url + "/count") as resp:
                found = await resp.json()
            sent, last = sent + found["sent"], max(last, found["last"])
        return sent, last

    async def replies(self, count: int, patience: float = 600.0) -> float:
        """Wait until ``count`` replies were sent in all: when the last one came."""
        deadline = time.monotonic() + patience
        while True:
            sent, last = await self.counts()
            if sent >= count:
                return last
            if time.monotonic() > deadline:
                raise TimeoutError(f"{sent} replies of {count}")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
        await asyncio.gather(*(p.stop(kill=True) for p in self.procs))


class Load:
    """Load generator processes, each its share of updates ``first`` .. ``first + count``."""

    def __init__(self, urls: list[str], first: int, count: int, clients: int, lanes: int):
        script = str(ROOT / "bench" / "loadgen.py")
        self.procs = []
        self.cpus: list[float] = []  # each one's CPU seconds, once done
        self.ends: list[float] = []  # when each was done (time.monotonic)
        self.busy = 0  # 503s (a full intake), each update sent again after them
        share = -(-count // clients)
        for start in range(first, first + count, share):
            args = {"urls": urls, "first": start, "count": min(share, first + count - start),
                    "secret": SECRET, "connections": lanes}  # fmt: skip
            self.procs.append(Proc([sys.executable, script, json.dumps(args)], "ready", stdin=True))

    async def start(self, cores: list[int | None]) -> None:
        await asyncio.gather(*(p.start() for p in self.procs))
        for proc, core in zip(self.procs, cores, strict=False):
            pin(proc.pid, core)

    def go(self) -> float:
        """Start them all: when (time.monotonic)."""
        for proc in self.procs:
            assert proc.process is not None and proc.process.stdin is not None
            proc.process.stdin.write(b"go\n")
        return time.monotonic()

    async def wait(self) -> float:
        """Once every update was answered 200: the generators' CPU seconds since ``go``."""
        for proc in self.procs:
            assert proc.process is not None
            if await proc.process.wait() != 0:
                raise RuntimeError("load generator failed:\n" + "".join(proc.output[-20:]))
            if proc._drain is not None:
                await proc._drain
            said = json.loads(proc.output[-1])
            self.cpus.append(said["cpu"])
            self.ends.append(said["end"])
            self.busy += said["busy"]
        return sum(self.cpus)


async def load(urls: list[str], first: int, count: int, clients: int = 1, lanes: int = 16) -> float:
    """Send the updates (unpinned), wait for every 200: the generators' CPU seconds."""
    generators = Load(urls, first, count, clients, lanes)
    await generators.start([])
    generators.go()
    return await generators.wait()
