"""The ACP test agent (tests/acp/agent.py) as a runtime for channel tests, and the prompts it
recorded: what reached the agent, block by block, as it came over the wire.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from gateway.runtimes import Runtime
from slashgate.registry import build_runtime
from tests.conftest import make_settings

AGENT = Path(__file__).with_name("agent.py")


def agent_settings(
    tmp_path: Path, env: dict[str, str] | None = None, agent: Path = AGENT
) -> dict[str, Any]:
    """Settings that run ``agent`` (the test agent by default) with ``env`` (``ACP_TEST_*``)."""
    return {
        "runtime": "acp",
        "acp_command": [sys.executable, str(agent)],
        "acp_cwd": tmp_path,
        "acp_env": {k: SecretStr(v) for k, v in (env or {}).items()},
    }


def recording_agent(tmp_path: Path, caps: str = "image") -> tuple[Runtime, Path]:
    """(runtime, record file): the test agent advertising ``caps``, recording its prompts."""
    record = tmp_path / "prompts.jsonl"
    env = {"ACP_TEST_RECORD": str(record), "ACP_TEST_PROMPT_CAPS": caps}
    return build_runtime(make_settings(**agent_settings(tmp_path, env))), record


def prompts(record: Path) -> list[list[dict[str, Any]]]:
    """Every prompt the agent received, oldest first (none: the file is not there)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def decoded(block: dict[str, Any]) -> bytes:
    """The bytes of an image, audio or embedded blob block."""
    data = block.get("data") or block["resource"]["blob"]
    return base64.b64decode(data)
