"""docs/extending.md's example, exactly as written, served the two ways the doc says."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.conftest import ROOT
from tests.http import SERVE, Served, serve_subprocess

DOC = ROOT / "docs" / "extending.md"
SLASHGATE = Path(sys.executable).with_name("slashgate")  # the console script pip installed


def example() -> str:
    """The doc's first Python block."""
    found = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert found is not None, "docs/extending.md has no python example"
    return found.group(1)


def test_the_example_is_about_twenty_lines_and_in_examples() -> None:
    assert len(example().strip().splitlines()) <= 22
    assert (ROOT / "examples" / "mybot.py").read_text(encoding="utf-8") == example()


async def post(served: Served, text: str) -> Any:
    body = {"conversation": "c1", "user": "ada", "text": text}
    async with aiohttp.ClientSession() as client:
        async with client.post(f"{served.url}/v1/messages", json=body) as resp:
            assert resp.status == 200
            return (await resp.json())["reply"]


async def check(served: Served) -> None:
    reply = await post(served, "/deploy prod @branch:fix-42 @file:app.py")
    assert reply == {
        "text": "Deploying to prod for ada\n- with branch fix-42\n- with file app.py",
        "category": None,
        "stop_reason": "end_turn",
    }
    usage = await post(served, "/deploy")
    assert usage["text"] == "Slash command /deploy failed: usage: /deploy <environment>"
    assert (await post(served, "hello"))["text"] == "Try /deploy <environment>. You said: hello"
    async with aiohttp.ClientSession() as client:
        async with client.get(f"{served.url}/v1/commands") as resp:
            commands = (await resp.json())["commands"]
    assert {
        "name": "deploy",
        "description": "Deploy to an environment",
        "hint": "environment",
    }.items() <= next(c for c in commands if c["name"] == "deploy").items()


@pytest.mark.parametrize("how", ["python mybot.py", "runtime = mybot:bot"])
async def test_the_example_runs_as_the_doc_says(how: str, tmp_path: Path) -> None:
    (tmp_path / "mybot.py").write_text(example(), encoding="utf-8")
    if how == "python mybot.py":  # .venv/bin/python: the one that runs the tests
        serving = serve_subprocess(sys.executable, "mybot.py", cwd=tmp_path, store="sqlite")
    else:  # the console script does not put the working directory on sys.path itself
        serving = serve_subprocess(
            str(SLASHGATE), "serve", cwd=tmp_path, runtime="mybot:bot", store="sqlite"
        )
    async with serving as served:
        await check(served)
        served.process.send_signal(signal.SIGINT)  # Ctrl-C, as the README says
        assert await served.process.wait() == 0
    assert "`.slashgate/state.sqlite3` in the working directory" in DOC.read_text(encoding="utf-8")
    assert (tmp_path / ".slashgate" / "state.sqlite3").is_file()


async def test_the_acp_agent_runs_with_the_command_the_doc_gives(tmp_path: Path) -> None:
    found = re.search(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert found is not None, "docs/extending.md has no settings for the ACP agent"
    (tmp_path / "acp.toml").write_text(found.group(1), encoding="utf-8")
    config = str(tmp_path / "acp.toml")  # started from the repository, as the doc says
    async with serve_subprocess(*SERVE, "--config", config, cwd=ROOT) as served:
        assert (await post(served, "/count 2"))["text"] == "1\n2\n"
