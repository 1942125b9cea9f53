"""An ACP agent that dies at start says why: its last lines on stderr (a bounded tail) come
with the error, in ``slashgate check`` and at start-up, not only at DEBUG.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.runtimes.stdio import TAIL
from tests.http import ROOT

# Twenty lines of chatter, then the traceback of a failed import, then the exit.
DIES = (
    "import sys\n"
    "for n in range(20): print(f'chatter {n}', file=sys.stderr)\n"
    "import no_such_module_here\n"
)


@pytest.mark.parametrize("command", ["check", "serve"])
def test_the_agents_last_stderr_lines_come_with_the_error(command: str, tmp_path: Path) -> None:
    agent = tmp_path / "agent.py"
    agent.write_text(DIES)
    config = tmp_path / "slashgate.toml"
    config.write_text(
        f'runtime = "acp"\nstore = "memory"\nworkspace = "{tmp_path / "workspace"}"\n[acp]\n'
        f"command = {json.dumps([sys.executable, str(agent)])}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    port = ["--port", "0"] if command == "serve" else []
    ran = subprocess.run(
        [sys.executable, "-m", "slashgate", command, "--config", str(config), *port],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    said = ran.stdout + ran.stderr
    assert ran.returncode == 1, said
    first = "runtime acp: FAILED: " if command == "check" else "slashgate: cannot start: "
    failure = said[said.index(first) :].splitlines()
    assert failure[0] == f"{first}ConnectionError: Connection closed", said
    assert failure[1] == "the agent's last lines on stderr:"
    tail = failure[2 : 2 + TAIL]
    assert tail[-1] == "  ModuleNotFoundError: No module named 'no_such_module_here'"
    assert "  chatter 19" in tail and "chatter 0" not in said, "the last lines, bounded"
