"""A real ACP agent from the registry: fast-agent (PyPI ``fast-agent-mcp``) in ACP mode with
its passthrough model (it answers with the prompt; ``***CALL_TOOL name {json}`` calls a tool),
so nothing leaves the machine. ``make tools`` installs it into ``.tools/fast-agent`` when
Python 3.13 is there (scripts/install-fast-agent.sh); otherwise these tests skip.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from slashgate.registry import build_runtime
from tests.acp.running import inbound, send, started
from tests.conftest import make_settings
from tests.http import read_events
from tests.recorder import Recorder

ROOT = Path(__file__).resolve().parents[2]
FAST_AGENT = ROOT / ".tools" / "fast-agent" / "bin"
TOOLS = Path(__file__).with_name("fast_agent_tools.py")
SSE = {"Accept": "text/event-stream"}

pytestmark = pytest.mark.skipif(
    not (FAST_AGENT / "fast-agent").exists(),
    reason="fast-agent is not installed: `make tools` installs it where Python 3.13 exists "
    "(scripts/install-fast-agent.sh)",
)


def isolated() -> list[str]:
    """A network namespace of its own (only a loopback, down) where the system allows one:
    whatever fast-agent or its MCP server might try, nothing leaves the machine.
    """
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rn", "true"], capture_output=True).returncode == 0:
        return [unshare, "-rn"]
    return []


def fast_agent_settings(tmp_path: Path) -> Any:
    command = [
        *isolated(),
        str(FAST_AGENT / "fast-agent"),
        "--no-update-check",
        "acp",
        "--model",
        "passthrough",
        "--home",
        str(tmp_path / "home"),
        "--stdio",
        f"{FAST_AGENT / 'python'} {TOOLS}",
    ]
    work = tmp_path / "work"
    work.mkdir()
    # Patience: fast-agent takes its time to start on a loaded machine (20 s was not enough).
    return make_settings(runtime="acp", acp_command=command, acp_cwd=work, inventory_wait=90.0)


async def agent_commands(http: aiohttp.ClientSession, url: str) -> list[str]:
    """The conversation's command names once fast-agent has reported its own. Its start-up
    sends no event a test could await, and on a loaded machine right after its install it has
    taken over 90 s (one inventory wait): ask again, for up to three minutes.
    """
    deadline = asyncio.get_running_loop().time() + 180
    while True:
        async with http.get(f"{url}/v1/commands?conversation=fa") as response:
            names = [c["name"] for c in (await response.json())["commands"]]
        if "agent-status" in names or asyncio.get_running_loop().time() > deadline:
            return names
        await asyncio.sleep(0.5)


async def test_fast_agent_through_the_webhook(tmp_path: Path, gateway_server: Any) -> None:
    settings = fast_agent_settings(tmp_path)
    async with gateway_server(build_runtime(settings)) as server, aiohttp.ClientSession() as http:
        names = await agent_commands(http, server.url)
        # fast-agent has a /status too: the gateway keeps the name, the agent's is aliased.
        assert names.count("status") == 1 and "agent-status" in names
        assert len(names) == len({n.lower() for n in names})

        async def send(text: str) -> dict[str, Any]:
            body = {"conversation": "fa", "user": "bob", "text": text}
            async with http.post(f"{server.url}/v1/messages", json=body) as response:
                reply: dict[str, Any] = (await response.json())["reply"]
                return reply

        help_text = (await send("/help"))["text"]
        assert "`/tool <tool-name>`" in help_text  # its hint brings its brackets: shown once
        assert help_text.count("`/status`") == 1 and "`/agent-status" in help_text
        ours, theirs = await send("/status"), await send("/agent-status")
        assert ours["text"].startswith("**Session:**")
        assert theirs["category"] is None and not theirs["text"].startswith("**Session:**")

        # An MCP tool: fast-agent asks first, the webhook client answers.
        call = "***CALL_TOOL clean " + json.dumps({"path": "build"})
        body = {"conversation": "fa", "user": "bob", "text": call}
        seen: list[tuple[str, Any]] = []
        async with http.post(f"{server.url}/v1/messages", json=body, headers=SSE) as response:
            async for event, data in read_events(response):
                seen.append((event, data))
                if event == "permission":
                    answer = {"conversation": "fa", "option": "allow_once"}
                    url = f"{server.url}/v1/permissions/{data['request_id']}"
                    async with http.post(url, json=answer) as answered:
                        assert answered.status == 200, await answered.text()
        permission = next(data for event, data in seen if event == "permission")
        assert "allow_once" in [o["option_id"] for o in permission["options"]]
        tools = [data for event, data in seen if event == "tool"]
        assert [t["phase"] for t in tools] == ["start", "end"]
        assert tools[-1]["status"] == "completed" and tools[-1]["output"] == "cleaned build"
        reply = seen[-1][1]["reply"]
        assert reply["category"] is None and "cleaned build" in reply["text"]


async def test_fast_agent_answers_the_first_message_after_a_cancel(tmp_path: Path) -> None:
    """A turn cancelled while fast-agent waits for a tool's permission; the next message gets
    its real answer (the passthrough model says it back), and so does the one after.
    """
    async with started(fast_agent_settings(tmp_path), wait=180) as gw:
        held = Recorder()
        call = "***CALL_TOOL clean " + json.dumps({"path": "build"})
        turn = asyncio.ensure_future(gw.handle(inbound(call, "fa"), held))
        await asyncio.wait_for(held.permission, 180)
        assert (await send(gw, "/cancel", "fa")).text == "Cancelled the running turn."
        await asyncio.wait_for(turn, 60)
        assert (await send(gw, "after the cancel", "fa", wait=120)).text == "after the cancel"
        assert (await send(gw, "later", "fa", wait=60)).text == "later"
