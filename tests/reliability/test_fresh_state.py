"""Several gateway commands started at once on one new state directory all work (issue 21,
defect 4): docs/slack.md has `slashgate slack manifest` run beside `slashgate serve`, and
each opens, so creates, the same SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from tests.http import ROOT
from tests.zygote import start_python

PROCESSES = 6
ROUNDS = 3


async def _manifest(state: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    env["SLASHGATE_STATE_PATH"] = str(state)
    env["SLASHGATE_SLACK_PUBLIC_URL"] = "https://gw.example.com"
    # Forked from the test zygote: real processes, started closer together than by exec.
    process = await start_python(
        "slashgate", "slack", "manifest",
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    return process.returncode or 0, out.decode(), err.decode(errors="replace")


async def test_slack_manifest_runs_at_once_on_a_new_directory_all_print_it(tmp_path: Path):
    for round_ in range(ROUNDS):
        state = tmp_path / f"round-{round_}" / "state.sqlite3"
        results = await asyncio.gather(*(_manifest(state) for _ in range(PROCESSES)))
        for code, out, err in results:
            assert code == 0, f"round {round_}: exit {code}:\n{err}"
            assert json.loads(out)["settings"]["event_subscriptions"]["request_url"] == (
                "https://gw.example.com/slack/events"
            )
