"""Instructions per request of the webhook's servers, counted by valgrind's cachegrind: a figure
the machine's load and speed do not move (the CPU-time ratios of ``make bench`` do, by the
minute on a shared machine), for telling a change of a few percent from noise.

``python bench/instructions.py [KIND ...]`` (default: ``bare contract webhook``, the servers of
bench/servers.py) runs each server under ``valgrind --tool=cachegrind`` twice, with ``--low``
and with ``--high`` requests of ``/echo hello`` from 16 connections, and prints the
difference of the two totals over the difference of the counts: start-up and shutdown
cancel out. User-space instructions only: the kernel's share of a request (the socket
calls), the same for every server, is not in it. Needs valgrind; not part of ``make bench``
(about a minute per server).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.run import drive, webhook_request  # noqa: E402

KINDS = ("bare", "contract", "webhook")
_TOTAL = re.compile(rb"I\s+refs:\s+([\d,]+)")


async def total(kind: str, requests: int) -> int:
    """Instructions of a whole run of server ``kind`` that answered ``requests`` requests."""
    with tempfile.TemporaryDirectory(prefix="slashgate-cachegrind-") as scratch:
        process = await asyncio.create_subprocess_exec(
            "valgrind", "--tool=cachegrind", "--cache-sim=no",
            f"--cachegrind-out-file={scratch}/out", sys.executable,
            str(ROOT / "bench" / "servers.py"), kind,
            cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 300)
        if not line.startswith(b"listening on "):
            raise RuntimeError(f"the {kind} server did not start under valgrind")
        await drive(webhook_request(line.decode().split()[-1]), requests, 16)
        process.terminate()
        _, err = await process.communicate()
    found = _TOTAL.search(err)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output for {kind}")
    return int(found.group(1).replace(b",", b""))


async def per_request(kind: str, low: int, high: int) -> float:
    counts = await asyncio.gather(total(kind, low), total(kind, high))  # one per core
    return (counts[1] - counts[0]) / (high - low)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("kinds", nargs="*", metavar="KIND", help=f"{', '.join(KINDS)} (default)")
    parser.add_argument("--low", type=int, default=200)
    parser.add_argument("--high", type=int, default=2200)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    kinds = args.kinds or KINDS
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown server kind: {', '.join(sorted(unknown))}")
    figures = {kind: await per_request(kind, args.low, args.high) for kind in kinds}
    anchor = figures.get("bare")
    print(f"instructions per POST /v1/messages /echo hello ({args.high - args.low} requests)")
    for kind, count in figures.items():
        ratio = f"{count / anchor:.2f}x bare" if anchor else ""
        print(f"{kind:10} {count / 1000:8.1f}k  {ratio}")


if __name__ == "__main__":
    asyncio.run(main())
