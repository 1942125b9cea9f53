"""The start-up's objects are frozen out of the collector's way while a server runs: all
garbage collected before the first freeze, a restart in the same process (a library user's,
or each test's) cheap, and nothing kept once the server stops. Run in a fresh interpreter,
so that its first start is the process's first.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.http import ROOT

SCRIPT = textwrap.dedent(
    """
    import asyncio, gc, sys, weakref
    from slashgate.config import Settings
    from slashgate.server import running

    def make_settings() -> Settings:  # loopback, a free port, nothing kept
        return Settings(port=0, store="memory", workspace=sys.argv[1])

    class Node:
        pass

    def cycle() -> weakref.ref:
        # garbage in the oldest generation: only a full collection frees it
        node = Node()
        node.me = node
        gc.collect()  # still referenced: it survives, into the oldest generation
        return weakref.ref(node)

    async def main() -> None:
        gc.disable()  # no automatic collection decides what this test sees
        before_first = cycle()
        async with running(make_settings()):
            print("first start: garbage made before it freed:", before_first() is None)
            print("first start: frozen:", gc.get_freeze_count() > 10_000)
            left_by_first = cycle()
        print("stopped: frozen:", gc.get_freeze_count())
        async with running(make_settings()):
            print("second start: frozen:", gc.get_freeze_count() > 10_000)
        gc.collect()
        print("stopped again: earlier garbage freed:", left_by_first() is None)

    asyncio.run(main())
    """
)


def test_frozen_while_serving_and_no_garbage_kept_after(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "first start: garbage made before it freed: True",
        "first start: frozen: True",
        "stopped: frozen: 0",
        "second start: frozen: True",
        "stopped again: earlier garbage freed: True",
    ]
