"""``slashgate access ...`` run as an operator runs it: a process of its own on the same store."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import ACCESS_DEFAULTS, ROOT
from tests.zygote import start_python


@dataclass(frozen=True)
class Said:
    status: int
    out: str
    err: str


async def access(store: dict[str, str], *args: str) -> Said:
    """``slashgate access ARGS`` with the store settings ``store`` (SLASHGATE_* names)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    env.update(store)
    # Forked from the test zygote (tests/zygote.py): a process of its own, less the imports.
    process = await start_python(
        "slashgate", "access", *args,
        cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return Said(process.returncode, out.decode(), err.decode())


def stored(tmp_path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The gateway's settings (the access defaults) and the CLI's environment for one SQLite
    file.
    """
    path = str(tmp_path / "state.sqlite3")
    gateway = {"store": "sqlite", "state_path": path, **ACCESS_DEFAULTS}
    return gateway, {"SLASHGATE_STORE": "sqlite", "SLASHGATE_STATE_PATH": path}
