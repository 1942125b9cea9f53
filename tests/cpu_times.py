"""Where the suite's CPU goes: a pytest plugin, off unless asked for.

``pytest -p tests.cpu_times`` writes one JSON line per test (its wall time, the CPU of the
process running it and of the child processes it waited for, from ``resource.getrusage``,
its worker and start time) to ``$CPU_TIMES_FILE`` (default ``cpu-times.jsonl``; each
xdist worker appends to it). ``python -m tests.cpu_times FILE`` sums them per area (a folder
of ``tests/``) and shows the slowest tests and how busy each worker was toward the end.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

OUT = Path(os.environ.get("CPU_TIMES_FILE", "cpu-times.jsonl"))


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _children() -> float:
    """The waited-for children's CPU, those forked by the test zygote (tests/zygote.py) too."""
    zygote = sys.modules.get("tests.zygote")
    return _cpu(resource.RUSAGE_CHILDREN) + (zygote.forked_cpu if zygote else 0.0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    wall, own, children = time.time(), _cpu(resource.RUSAGE_SELF), _children()
    yield
    record = {
        "test": item.nodeid,
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "start": wall,
        "wall": time.time() - wall,
        "own": _cpu(resource.RUSAGE_SELF) - own,
        "children": _children() - children,
    }
    with OUT.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def pytest_unconfigure() -> None:
    # The whole test process, collection, session fixtures and the zygote included.
    record = {
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "process": _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN),
    }
    with OUT.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _area(nodeid: str) -> str:
    parts = nodeid.split("::")[0].split("/")
    return parts[1] if len(parts) > 2 else "tests/*.py"


def report(path: Path) -> None:
    """Per area and in all: tests, wall, own and children's CPU; the slowest tests; the tail."""
    lines: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines()]
    records = [r for r in lines if "test" in r]
    # The main process waited for the workers: its record is the whole run's CPU.
    processes = {r["worker"]: r["process"] for r in lines if "process" in r}
    areas: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in records:
        row = areas[_area(r["test"])]
        row[0] += 1
        row[1] += r["wall"]
        row[2] += r["own"]
        row[3] += r["children"]
    print(f"{'area':<22}{'tests':>6}{'wall s':>9}{'own s':>9}{'child s':>9}{'cpu s':>9}")
    total = [0, 0.0, 0.0, 0.0]
    for name, row in sorted(areas.items(), key=lambda kv: -(kv[1][2] + kv[1][3])):
        print(
            f"{name:<22}{row[0]:>6}{row[1]:>9.1f}{row[2]:>9.1f}{row[3]:>9.1f}"
            f"{row[2] + row[3]:>9.1f}"
        )
        total = [t + v for t, v in zip(total, row, strict=True)]
    print(
        f"{'all':<22}{total[0]:>6}{total[1]:>9.1f}{total[2]:>9.1f}{total[3]:>9.1f}"
        f"{total[2] + total[3]:>9.1f}"
    )
    for worker, cpu in sorted(processes.items()):
        print(f"process {worker}: {cpu:.1f} s of CPU in all, with the processes it waited for")
    print("\nslowest (cpu s, wall s):")
    for r in sorted(records, key=lambda r: -(r["own"] + r["children"]))[:40]:
        print(f"{r['own'] + r['children']:7.1f} {r['wall']:7.1f}  {r['test']}")
    begin = min(r["start"] for r in records)
    print("\nworkers (tests, busy s, last end s after the first start):")
    for worker in sorted({r["worker"] for r in records}):
        mine = [r for r in records if r["worker"] == worker]
        end = max(r["start"] + r["wall"] for r in mine) - begin
        last = max(mine, key=lambda r: r["start"])
        print(
            f"{worker}: {len(mine)} tests, {sum(r['wall'] for r in mine):.0f} s busy, "
            f"ends at {end:.0f} s, last: {last['test']} ({last['wall']:.1f} s)"
        )


if __name__ == "__main__":
    report(Path(sys.argv[1]))
