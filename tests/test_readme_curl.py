"""The README's "Try it" block, run as written (only its port changed) from before the gateway
listens, as when pasted while ``make run &`` still installs: it waits for the gateway and
prints the replies' text. The README's streaming example streams. And every curl example in
the docs that sends a JSON body says it is JSON (``curl -d`` alone sends a form, which the
API answers with 415).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
from pathlib import Path

import pytest

from tests.http import ROOT, SERVE, STARTUP, serve_subprocess

README = ROOT / "README.md"
MISSING = [tool for tool in ("curl", "jq") if shutil.which(tool) is None]


def commands(block: str) -> list[str]:
    """The shell commands of a code block, continuation lines joined."""
    return block.replace("\\\n", " ").splitlines()


def block(after: str) -> str:
    """The first ``sh`` code block of the README after the text ``after``."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```sh\n(.*?)```", text[text.index(after) :], re.S)
    assert found is not None, after
    return re.sub(r"^ +", "", found[1], flags=re.M)  # a block in a list item is indented


async def run(script: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "bash", "-e", "-o", "pipefail", "-c", script, stdout=asyncio.subprocess.PIPE
    )


@pytest.mark.skipif(bool(MISSING), reason=f"{' and '.join(MISSING)} not installed")
async def test_the_readmes_try_it_block_waits_for_the_gateway_and_prints_the_replies(
    tmp_path: Path,
) -> None:
    first, *rest = commands(block("## Try it"))
    assert first == "make run &"  # the test starts what make run starts, below
    # The port stays taken, and refuses connections, until the gateway listens on it.
    with socket.socket() as reserved:
        reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        reserved.bind(("127.0.0.1", 0))
        port = reserved.getsockname()[1]
        try_it = await run("\n".join(rest).replace("localhost:8080", f"localhost:{port}"))
        # make run: slashgate serve with every setting at its default, in a folder of its own.
        async with serve_subprocess(*SERVE, cwd=tmp_path, port=port, store="sqlite") as served:
            reserved.close()
            out, _ = await asyncio.wait_for(try_it.communicate(), STARTUP)
            assert try_it.returncode == 0, served.output
            stream = await run(block("`accepted` always comes first").replace(":8080", f":{port}"))
            events, _ = await asyncio.wait_for(stream.communicate(), STARTUP)
    lines = out.decode().splitlines()
    assert lines[:3] == ["hello", "Remembered /hi.", "Hello!"]
    assert lines[3:7] == [
        "/help: List commands",
        "/new: Start a new session",
        "/cancel: Cancel the running turn",
        "/status: Show session status",
    ]
    assert "/remember: Add a command that replies with a text" in lines
    assert lines[-1] == "/hi: Remembered: Hello!"
    said = events.decode()
    assert said.startswith("event: accepted\n") and "event: reply\n" in said, said
    assert said.index('"1/2\\n"') < said.index('"2/2\\n"') < said.index("event: reply")


def test_every_curl_example_that_sends_json_says_so() -> None:
    checked = 0
    for doc in (README, *sorted((ROOT / "docs").rglob("*.md"))):
        text = doc.read_text(encoding="utf-8")
        for found in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S):
            for command in commands(found):
                if "curl" in command and re.search(r"\s-d\s+'\{", command):
                    checked += 1
                    sends_json = "Content-Type: application/json" in command or '"$JSON"' in command
                    assert sends_json, f"{doc.name}: {command}"
    assert checked >= 6
