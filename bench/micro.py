"""The figures of one process: the contract on one short message, its cost against the input
size, and memory per idle conversation (bench/memory.py, in a process of its own).

Run alone, it prints the contract's two rows of ``make bench`` (``--conversations N`` adds
the memory row): ``python bench/micro.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from contract import Command, SlashContract, composer_input_problems  # noqa: E402

SHORT = "/echo deploy @file:a.py to dev"  # 30 characters: a command, a reference, words
SIZES = (64 * 1024, 128 * 1024, 256 * 1024, 512 * 1024, 1024 * 1024)  # UTF-8 bytes
# One line of a long message (a pasted report): words, a reference, an emoji, a mention, a
# path. About one node per 50 bytes: 20,000 nodes in 1 MiB.
PIECE = "Please check @file:src/gateway/core.py again 😀: @ann saw /usr/bin/env fail twice.\n"


def contract() -> SlashContract:
    """The embedded demo's inventory and the gateway's host commands."""
    return SlashContract(
        commands=[Command(name=n) for n in ("echo", "slow", "remember", "forget", "quickstart")],
        interactive_only={"settings", "hotkeys", "theme", "themes"},
        host_commands=[
            Command(name=n, source="gateway")
            for n in ("help", "new", "cancel", "status", "commands")
        ],
    )


def per_call_us(fn: Callable[[], object], batch: int = 2000, rounds: int = 21) -> float:
    """Median over ``rounds`` batches of the time per call, in microseconds."""
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(batch):
            fn()
        samples.append((time.process_time() - start) / batch * 1e6)
    return statistics.median(samples)


def long_message(size: int) -> str:
    """A slash command followed by ``PIECE`` repeated to ``size`` UTF-8 bytes."""
    head = "/echo "
    unit = len(PIECE.encode())
    return head + PIECE * ((size - len(head)) // unit)


def full_cost_ms(slash: SlashContract, text: str, rounds: int) -> float:
    """Best of ``rounds``: classify, payload, JSON dump, validation (as a runtime gets it)."""
    best = math.inf
    for _ in range(rounds):
        start = time.process_time()
        payload = slash.classify(text).payload.model_dump(mode="json", exclude_none=True)
        problems = composer_input_problems(payload)
        best = min(best, time.process_time() - start)
        assert not problems, problems[:3]
    return best * 1000


def exponent(sizes: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) over log(size)."""
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in times]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


@dataclass
class Figures:
    short_us: float
    baseline_us: float
    sizes: list[int]
    times_ms: list[float]
    conversations: int
    per_conversation: float  # bytes

    def rows(self) -> list[tuple[str, str, str, str, str]]:
        scaling = ", ".join(
            f"{s // 1024} KiB {t:.1f}" for s, t in zip(self.sizes, self.times_ms, strict=True)
        )
        return [
            (
                "contract classify + payload, 30 chars (us)",
                f"{self.short_us:.2f}",
                f"json.dumps of it {self.baseline_us:.2f}",
                f"{self.short_us / self.baseline_us:.1f}x json.dumps",
                "<= 5 us",
            ),
            (
                "classify + payload + validation, 1 MiB (ms)",
                f"{self.times_ms[-1]:.1f}",
                scaling,
                f"exponent {exponent(self.sizes, self.times_ms):.2f}",
                "<= 50 ms, linear",
            ),
            (
                f"memory per idle conversation, {self.conversations:,} (KB)",
                f"{self.per_conversation / 1000:.2f}",
                "-",
                "-",
                "<= 4 KB",
            ),
        ]


def measure(conversations: int) -> Figures:
    """Every figure; the memory one only for ``conversations`` > 0."""
    slash = contract()
    assert len(SHORT) == 30
    assert slash.classify(SHORT).payload.model_dump(mode="json", exclude_none=True)["nodes"]
    short = per_call_us(lambda: slash.classify(SHORT).payload)
    baseline = per_call_us(lambda: json.dumps({"text": SHORT}))
    times = [full_cost_ms(slash, long_message(size), 3) for size in SIZES]
    per_conversation = math.nan
    if conversations > 0:
        memory = subprocess.run(
            [sys.executable, str(ROOT / "bench" / "memory.py"), str(conversations)],
            check=True, capture_output=True, text=True, cwd=ROOT,
        )  # fmt: skip
        per_conversation = float(memory.stdout.split()[-1])
    return Figures(short, baseline, list(SIZES), times, conversations, per_conversation)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1, help="measure this many times")
    parser.add_argument(
        "--conversations", type=int, default=0, help="memory row over this many (0: none)"
    )
    args = parser.parse_args()
    for _ in range(args.runs):
        figures = measure(args.conversations)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average {load}")
        for row in figures.rows()[: 3 if args.conversations > 0 else 2]:
            print(" | ".join(row))


if __name__ == "__main__":
    main()
