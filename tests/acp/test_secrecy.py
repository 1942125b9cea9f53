"""The agent cannot read the gateway's secrets (issue 32, docs/security.md): an agent started by
``slashgate serve`` tries ``/proc/<gateway>/environ``, its memory and the state file, and
finds no token and no access; its own environment has no ``SLASHGATE_*`` variable.

Root reads any process's environment, non-dumpable or not: run as root, the test starts the
agent as ``nobody`` (``agent_user``), as a gateway run as root must. Run as another user, the
agent runs as that same user, and what keeps it out is the non-dumpable gateway.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.http import ROOT, serve_subprocess

PRYING = Path(__file__).with_name("prying_agent.py")
SECRECY = ROOT / "gateway" / "secrecy.py"
TOKEN = "whk-the-gateways-own-0123456789"
AGENT_KEY = "agent-key-for-the-agent-only"
ROOTED = os.geteuid() == 0
AGENT_USER = "nobody"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's /proc")


def agent_uid() -> int | None:
    """The uid the agent runs as: nobody's under root (skipped when there is no such user)."""
    if not ROOTED:
        return None
    try:
        return pwd.getpwnam(AGENT_USER).pw_uid
    except KeyError:
        pytest.skip(f"no user {AGENT_USER} to start the agent as")


def python_for(uid: int | None) -> str:
    """A Python the agent's user can run: this one, unless it lies where that user cannot
    reach (a root's pyenv under /root).
    """
    if uid is None:
        return sys.executable
    for candidate in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if candidate and _runs(candidate, uid):
            return candidate
    pytest.skip(f"no Python that {AGENT_USER} can run")


def _runs(python: str, uid: int) -> bool:
    try:
        done = subprocess.run([python, "-c", "pass"], user=uid, cwd="/", timeout=30)
    except OSError:
        return False
    return done.returncode == 0


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder every user may enter (tmp_path is root's alone): the gateway's folder, the
    workspace and the agent go in it.
    """
    folder = Path(tempfile.mkdtemp(prefix="slashgate-secrecy-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def test_an_agent_reads_no_secret_of_the_gateway(base: Path) -> None:
    uid = agent_uid()
    home = base / "gateway"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    state = home / "slashgate-state.sqlite3"
    workspace = base / "workspace"
    agent = base / "prying_agent.py"
    shutil.copy(PRYING, agent)
    agent.chmod(0o644)
    settings = {
        "runtime": "acp",
        "acp_command": json.dumps([python_for(uid), str(agent), str(state)]),
        "acp_env": json.dumps({"AGENT_KEY": AGENT_KEY}),
        "webhook_token": TOKEN,
        "store": "sqlite",
        "state_path": str(state),
        "workspace": str(workspace),
        "inventory_wait": "1",
        **({"agent_user": AGENT_USER} if uid is not None else {}),
    }
    async with serve_subprocess(**settings) as served:
        said = await _ask(served.url, "what can you see?")
    found = json.loads(said)
    assert found["environ"] == "PermissionError", found["environ"][:200]
    assert found["mem"] == "PermissionError"
    assert found["state"] == "PermissionError"
    assert TOKEN not in said
    assert "AGENT_KEY" in found["env"]  # its own, given by acp_env
    assert not [name for name in found["env"] if name.upper().startswith("SLASHGATE_")]
    # Its folder is its own: the workspace, made 0700 for the agent's user.
    assert found["cwd"] == str(workspace)
    made = workspace.stat()
    assert stat.S_IMODE(made.st_mode) == 0o700
    assert made.st_uid == (uid if uid is not None else os.geteuid()) == found["uid"]
    # The state file is the gateway's user's alone (tests/state/test_private.py: its WAL).
    assert stat.S_IMODE(state.stat().st_mode) == 0o600


async def _ask(url: str, text: str) -> str:
    body = {"conversation": "c1", "user": "u1", "text": text}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/v1/messages", json=body, headers=headers) as response,
    ):
        answer: dict[str, Any] = await response.json()
    assert response.status == 200, answer
    text_: str = answer["reply"]["text"]
    return text_


# A process that seals itself (gateway/secrecy.py, loaded from its file: the Python that runs
# it may have none of the gateway's packages), then has a child of the same user read its
# environment. ``sys.argv[1]``: "seal" or "open".
PARENT = """
import importlib.util, os, subprocess, sys
spec = importlib.util.spec_from_file_location("secrecy", sys.argv[2])
secrecy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(secrecy)
if sys.argv[1] == "seal":
    assert secrecy.seal(["SLASHGATE_WEBHOOK_TOKEN"]), "not made non-dumpable"
    assert "SLASHGATE_WEBHOOK_TOKEN" not in os.environ
child = "import os\\ntry:\\n print(open('/proc/%d/environ', 'rb').read().decode(errors='replace'))"
child += "\\nexcept OSError as exc:\\n print(type(exc).__name__)\\n"
out = subprocess.run([sys.executable, "-c", child % os.getpid()], capture_output=True, text=True)
print(out.stdout.strip())
"""


@pytest.mark.parametrize("how", ["open", "seal"])
def test_a_process_of_the_same_user_cannot_read_a_sealed_gateways_environment(
    how: str, base: Path
) -> None:
    """The non-dumpable part alone, between two processes of one user that is not root (as
    root, ``nobody``): without ``seal`` the child reads the token, with it nothing.
    """
    uid = agent_uid()
    script = base / "parent.py"
    script.write_text(PARENT, encoding="utf-8")
    script.chmod(0o644)
    secrecy = base / "secrecy.py"
    shutil.copy(SECRECY, secrecy)
    secrecy.chmod(0o644)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SLASHGATE_WEBHOOK_TOKEN": TOKEN}
    done = subprocess.run(
        [python_for(uid), str(script), how, str(secrecy)],
        user=uid, env=env, cwd="/", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    if how == "open":
        assert TOKEN in done.stdout  # what the gateway did before: the test can see it
    else:
        assert done.stdout.strip() == "PermissionError"
