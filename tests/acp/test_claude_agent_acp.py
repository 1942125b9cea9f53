"""The real claude-agent-acp (npm ``@zed-industries/claude-agent-acp``, with the Claude Agent SDK's
JavaScript CLI) over ACP, its model a local mock of the Anthropic API
(tests/acp/mock_anthropic.py): nothing leaves the machine. ``make tools`` installs it into
``.tools/claude-agent-acp`` (scripts/install-claude-agent-acp.sh); without node or the npm
registry these tests skip with the reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from tests.acp import mock_anthropic
from tests.acp.running import inbound, send, started
from tests.conftest import make_settings
from tests.recorder import Recorder

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / ".tools" / "claude-agent-acp"
AGENT = TOOL / "node_modules" / ".bin" / "claude-agent-acp"
WAIT = 60.0  # the agent starts its CLI (node) per session: seconds on a loaded machine


def _missing() -> str:
    failed = TOOL / "install-failed"  # written by scripts/install-claude-agent-acp.sh
    if failed.exists():
        return f"claude-agent-acp is not installed: {failed.read_text().strip()}"
    return "claude-agent-acp is not installed: `make tools` installs it (make test does)"


pytestmark = pytest.mark.skipif(not AGENT.exists(), reason=_missing())


def agent_env(tmp_path: Path, url: str) -> dict[str, SecretStr]:
    """Its model at the mock; its home, config and nothing else of the machine's; none of the
    traffic it would send besides its model's (updates, telemetry, error reports).
    """
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-mock",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return {name: SecretStr(value) for name, value in env.items()}


async def test_claude_agent_acp_after_a_cancel_and_with_its_usage(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    work = tmp_path / "work"
    work.mkdir()
    async with mock_anthropic.serve() as mock:
        settings = make_settings(
            runtime="acp",
            acp_command=[str(AGENT)],
            acp_cwd=work,
            acp_env=agent_env(tmp_path, mock.url),
            run_timeout=WAIT,
        )
        async with started(settings, WAIT) as gw:
            first = await send(gw, "hello", wait=WAIT)
            held = Recorder()
            turn = asyncio.ensure_future(gw.handle(inbound("[hold] think"), held))
            await asyncio.wait_for(mock.holding.wait(), WAIT)
            assert (await send(gw, "/cancel")).text == "Cancelled the running turn."
            await asyncio.wait_for(turn, WAIT)
            after = await send(gw, "after the cancel", wait=WAIT)
            later = await send(gw, "later", wait=WAIT)
    assert first.text == "echo: hello"
    # Its usage_update has used: null; the context size and the cost come through all the same.
    assert first.reply is not None and first.reply.usage is not None
    assert first.reply.usage.context_size == 200000 and first.reply.usage.cost is not None
    assert first.reply.usage.context_used is None
    faults = [
        r.getMessage() for r in caplog.records if "out of the protocol's shape" in r.getMessage()
    ]
    assert len(faults) == 1 and "usage_update.used" in faults[0]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    # The first message after a cancel gets its answer, once, and so does the next.
    assert held.text.endswith("_(cancelled)_")
    assert after.text == "echo: after the cancel"
    assert later.text == "echo: later"
    # The session opened again goes on with the conversation's history.
    assert "hello" in json.dumps(mock.requests[-1]["messages"])
