"""Where a request's work goes, counted in Python bytecodes per function: a profile that the
machine's load does not move and that profiling itself does not bend (cProfile's cost per
call is larger than most of the calls it times), for reading two trees side by side.

``python bench/bytecodes.py KIND [--requests N] [--top N]`` serves ``KIND`` (``bare``,
``contract``, ``webhook``, ``telegram``, ``slack``: the servers of bench/servers.py) in a
process of its own, warms it up, then counts every bytecode its new Python frames run
(``sys.settrace`` with ``f_trace_opcodes``) over ``--requests`` requests of the bench's load
(bench/load.py, 8 connections), and prints the bytecodes per request: the total, by part
(slashgate's modules one by one, aiohttp, asyncio, the other libraries) and the ``--top``
functions. Work in C (JSON, pydantic's core, the sockets) runs no bytecode and is not
counted: ``bench/instructions.py`` counts that. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("bare", "contract", "webhook", "telegram", "slack")
FIRST_PARTY = ("contract", "gateway", "channels", "slashgate")
WARM_UP = 300
WORKERS = 8


def part(filename: str) -> str:
    """The part a function's file belongs to: a first-party module, or a library."""
    path = Path(filename)
    try:
        relative = path.relative_to(ROOT)
    except ValueError:
        relative = None
    if relative is not None and relative.parts[0] in FIRST_PARTY:
        return str(relative)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1].removesuffix(".py")
    if path.parent.name == "asyncio" or path.name == "selectors.py":
        return "asyncio"
    return "python" if filename.startswith(("/", "<frozen")) else filename  # <string>: made


# -- in the server's process ----------------------------------------------------------------


class Counting:
    """The trace: bytecodes per (part, function), counted between SIGUSR1 and SIGUSR2."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        key = (part(frame.f_code.co_filename), frame.f_code.co_qualname)
        counts = self.counts

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
            return local

        return local


def serve(kind: str, api: str, out: Path) -> None:
    from bench import servers

    counting = Counting()

    def start() -> None:
        sys.settrace(counting)

    def stop() -> None:
        sys.settrace(None)
        out.write_text("\n".join(f"{n}\t{p}\t{f}" for (p, f), n in counting.counts.items()))
        print("counted", flush=True)  # the bench's process waits for this line

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, start)
        loop.add_signal_handler(signal.SIGUSR2, stop)
        await servers.main(kind, api)

    asyncio.run(main())


# -- in the bench's process -----------------------------------------------------------------


async def measure(kind: str, requests: int) -> Counter[tuple[str, str]]:
    from bench.load import drive, slack_request, telegram_request, webhook_request
    from bench.platforms import FakeSlack, FakeTelegram

    fake: FakeTelegram | FakeSlack | None = None
    api = ""
    if kind == "telegram":
        fake = FakeTelegram()
        api = await fake.start()
    elif kind == "slack":
        fake = FakeSlack()
        await fake.start()
        api = fake.api
    with tempfile.TemporaryDirectory(prefix="slashgate-bytecodes-") as scratch:
        out = Path(scratch) / "counts"
        server = await asyncio.create_subprocess_exec(
            sys.executable, __file__, "--serve", kind, api, str(out),
            stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert server.stdout is not None
        url = (await asyncio.wait_for(server.stdout.readline(), 60)).decode().split()[-1]
        if isinstance(fake, FakeTelegram):
            request = telegram_request(url, fake)
        elif isinstance(fake, FakeSlack):
            request = slack_request(url, fake)
        else:
            request = webhook_request(url)
        await drive(request, WARM_UP, WORKERS)
        server.send_signal(signal.SIGUSR1)
        await drive(request, requests, WORKERS)
        server.send_signal(signal.SIGUSR2)
        await asyncio.wait_for(server.stdout.readline(), 60)  # "counted": the file is there
        server.terminate()
        await server.wait()
        counts: Counter[tuple[str, str]] = Counter()
        for line in out.read_text().splitlines():
            n, p, f = line.split("\t")
            counts[p, f] = int(n)
    if fake is not None:
        await fake.stop()
    return counts


def report(kind: str, counts: Counter[tuple[str, str]], requests: int, top: int) -> None:
    parts: Counter[str] = Counter()
    for (p, _), n in counts.items():
        parts[p] += n
    total = sum(parts.values())
    print(f"{kind}: {total / requests:,.0f} bytecodes per request ({requests} requests)")
    own = sum(n for p, n in parts.items() if p.split("/")[0] in FIRST_PARTY)
    print(f"  slashgate's own modules: {own / requests:,.0f}")
    for p, n in parts.most_common():
        if n / requests >= 1:
            print(f"  {n / requests:8,.0f}  {p}")
    print(f"  top {top} functions:")
    for (p, f), n in counts.most_common(top):
        print(f"  {n / requests:8,.0f}  {p}:{f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    report(args.kind, asyncio.run(measure(args.kind, args.requests)), args.requests, args.top)


if __name__ == "__main__":
    main()
