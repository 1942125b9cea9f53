"""The README's curl examples, run as written against a gateway on loopback (only its port
changed), answer as the README says; and every curl example in the docs that sends a JSON
body says it is JSON (``curl -d`` alone sends a form, which the API answers with 415).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import pytest

from tests.http import ROOT, serve_subprocess

CURL = shutil.which("curl")
README = ROOT / "README.md"


def commands(block: str) -> list[str]:
    """The shell commands of a code block, continuation lines joined."""
    return block.replace("\\\n", " ").splitlines()


def try_it() -> list[str]:
    found = re.search(r"## Try it\n\n```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert found is not None
    return [c for c in commands(found[1]) if c.strip() and not c.startswith("make run")]


@pytest.mark.skipif(CURL is None, reason="curl is not installed")
async def test_the_readmes_curl_examples_work_as_written() -> None:
    lines = try_it()
    setup = [line for line in lines if not line.startswith("curl")]
    curls = [line for line in lines if line.startswith("curl")]
    assert len(curls) == 5, curls
    answers = []
    async with serve_subprocess() as served:
        for curl in curls:
            script = "\n".join([*setup, curl.replace("localhost:8080", served.url[7:])])
            process = await asyncio.create_subprocess_exec(
                "bash", "-e", "-c", script, stdout=asyncio.subprocess.PIPE
            )
            out, _ = await process.communicate()
            assert process.returncode == 0, curl
            answers.append(out.decode())
    replies = [json.loads(answer)["reply"] for answer in answers[:3]]
    assert replies[0]["text"] == "hello"
    assert replies[1]["category"] is None
    assert replies[2]["text"] == "Hello!"
    assert "hi" in {command["name"] for command in json.loads(answers[3])["commands"]}
    assert answers[4].startswith("event: accepted") and "event: reply" in answers[4]


def test_every_curl_example_that_sends_json_says_so() -> None:
    checked = 0
    for doc in (README, *sorted((ROOT / "docs").rglob("*.md"))):
        text = doc.read_text(encoding="utf-8")
        for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S):
            for command in commands(block):
                if "curl" in command and re.search(r"\s-d\s+'\{", command):
                    checked += 1
                    sends_json = "Content-Type: application/json" in command or '"$JSON"' in command
                    assert sends_json, f"{doc.name}: {command}"
    assert checked >= 6
