"""The table of bench/run.py: slashgate on each store beside its anchor, then the contract's
figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Sequence

from bench import micro
from bench.load import Pair

# The webhook's floor (bench/servers.py ``contract``): its answer without the core and runtime.
WEBHOOK_FLOOR = "  floor: the contract's work alone"


def spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:{fmt}} ({low:{fmt}}-{high:{fmt}})"


def machine() -> str:
    model = "unknown CPU"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"nproc {os.cpu_count()}, {model}, load average {load}"


STORE_NAMES = {"memory": "memory", "sqlite": "SQLite"}
GOALS = {
    "webhook /echo": "<= 1.25x (no worse than 1.67x)",
    WEBHOOK_FLOOR: "-",
    "Telegram /echo": "<= 1.2x (no worse than 1.5x)",
    "Slack /agent echo": "<= 1.0x",
}
ANCHORS = {
    "webhook /echo": "bare aiohttp JSON",
    WEBHOOK_FLOOR: "bare aiohttp JSON",
    "Telegram /echo": "aiogram echo bot",
    "Slack /agent echo": "slack-bolt ack+say",
}


def servers_rows(
    pairs: list[Pair], ack_rows: dict[str, dict[str, list[float]]], stores: list[str]
) -> list[tuple[str, ...]]:
    """figure | slashgate on each store | anchor | ratio on each store | goal."""
    rows: list[tuple[str, ...]] = [
        (
            "figure",
            *(f"slashgate, {STORE_NAMES[store]}" for store in stores),
            "anchor",
            *(f"ratio, {STORE_NAMES[store]} (range)" for store in stores),
            "goal",
        )
    ]
    for pair in pairs:
        if not pair.cpu_us["anchor"]:
            continue
        rows.append(
            (
                f"{pair.name}: server CPU/request (us)",
                *(spread(pair.cpu_us[store], ".0f") for store in stores),
                f"{ANCHORS[pair.name]} {spread(pair.cpu_us['anchor'], '.0f')}",
                *(spread(pair.ratios(store), ".2f") for store in stores),
                GOALS[pair.name],
            )
        )
        if pair.name == WEBHOOK_FLOOR:
            continue  # a part of the webhook's figure: its throughput says nothing more
        anchor = statistics.median(pair.rate["anchor"])
        rows.append(
            (
                f"{pair.name}: throughput (req/s, client)",
                *(spread(pair.rate[store], ".0f") for store in stores),
                spread(pair.rate["anchor"], ".0f"),
                *(f"{statistics.median(pair.rate[store]) / anchor:.2f}" for store in stores),
                "-",
            )
        )
    goal = "median <= 2 ms"
    for label, acks in ack_rows.items():
        if not acks["anchor"]:
            continue
        p90 = {role: statistics.quantiles(v, n=10)[-1] for role, v in acks.items()}
        median = {role: statistics.median(v) for role, v in acks.items()}
        rows.append(
            (
                label,
                *(f"median {median[store]:.2f}, p90 {p90[store]:.2f}" for store in stores),
                f"median {median['anchor']:.2f}, p90 {p90['anchor']:.2f}",
                *(f"{median[store] / median['anchor']:.2f}" for store in stores),
                goal,
            )
        )
        goal = "-"  # the goal is the first row's
        if "floor" in acks:
            rows.append(
                (
                    "  floor: a bare aiohttp server, idle as the servers",
                    *("-" for _ in stores),
                    f"median {median['floor']:.2f}, p90 {p90['floor']:.2f}",
                    *(f"ack {median[store] / median['floor']:.2f}x it" for store in stores),
                    "-",
                )
            )
    return rows


def aligned(rows: Sequence[tuple[str, ...]]) -> list[str]:
    """The rows in columns, a rule under the first."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = (cell.ljust(w) for cell, w in zip(row, widths, strict=True))
        lines.append(" | ".join(cells).rstrip())
        if i == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return lines


def table(
    pairs: list[Pair],
    ack_rows: dict[str, dict[str, list[float]]],
    figures: micro.Figures,
    args: argparse.Namespace,
) -> str:
    stores = ", ".join(
        f"{STORE_NAMES[store]} {args.sqlite_requests if store == 'sqlite' else args.requests}"
        for store in args.stores
    )
    contract = [("figure", "slashgate", "anchor", "ratio", "goal"), *figures.rows()]
    return "\n".join(
        [
            f"slashgate bench: {machine()}",
            f"requests per round and server after {args.warmup} warm-up: {stores}, anchors "
            f"{args.requests}; {args.workers} connections, {args.rounds} rounds (each server "
            "first in turn), a fresh state file per SQLite server; medians with (min-max) "
            "over rounds",
            "",
            *aligned(servers_rows(pairs, ack_rows, args.stores)),
            "",
            *aligned(contract),
        ]
    )
