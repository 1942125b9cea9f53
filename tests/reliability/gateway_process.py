"""``slashgate serve`` as a process that a test can SIGKILL and start again on the same state."""

from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass, field

from tests.http import ROOT
from tests.zygote import Forked, start_python

STARTUP = 120.0  # seconds: several of these start at once on a small, busy machine


@dataclass
class GatewayProcess:
    env: dict[str, str]  # SLASHGATE_* settings, without the prefix
    url: str = ""
    output: list[str] = field(default_factory=list)
    process: Forked | asyncio.subprocess.Process | None = None
    _drain: asyncio.Task[None] | None = None

    async def start(self) -> str:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
        clean.update({f"SLASHGATE_{k.upper()}": v for k, v in self.env.items()})
        # Forked from the zygote: the same start, less the 3.5 s of CPU for the imports.
        self.process = await start_python(
            "slashgate", "serve", "--port", "0",
            cwd=ROOT, env=clean,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        assert self.process.stdout is not None
        while True:
            line = (await asyncio.wait_for(self.process.stdout.readline(), STARTUP)).decode()
            if not line:
                raise RuntimeError("slashgate exited early:\n" + "".join(self.output[-40:]))
            self.output.append(line)
            if line.startswith("slashgate listening on "):
                self.url = line.split()[-1]
                break
        self._drain = asyncio.ensure_future(self._read(self.process))
        return self.url

    async def _read(self, process: Forked | asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        async for raw in process.stdout:
            self.output.append(raw.decode(errors="replace"))

    async def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as a crash or an OOM kill."""
        await self._end(signal.SIGKILL)

    async def stop(self) -> None:
        await self._end(signal.SIGTERM)

    async def _end(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.returncode is None:
            process.send_signal(sig)
        await asyncio.wait_for(process.wait(), STARTUP)
        if self._drain is not None:
            await self._drain
