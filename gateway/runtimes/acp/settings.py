"""The ACP runtime's settings (``[acp]``, ``SLASHGATE_ACP_*``), with ``runtime = "acp"``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from ..stdio import missing_program, program
from ..workspace import AgentSettings


class AcpSettings(AgentSettings):
    # Any Agent Client Protocol agent over stdio. (Lists and tables as factories: a mutable
    # default of a class that ruff does not see is a model's is taken for one shared value.)
    acp_command: list[str] = Field(default_factory=list)
    """With `runtime = "acp"`: the agent's command line, e.g. `["gemini", "--acp"]`."""
    acp_cwd: Path | None = None
    """The ACP agent's working folder; unset: `workspace`."""
    acp_env: dict[str, SecretStr] = Field(default_factory=dict)
    """Extra environment of the ACP agent (API keys, often), revealed only to it."""
    acp_auth_method: str | None = None
    """The authentication method to use when the agent asks for one."""


def refusal(settings: AcpSettings) -> str | None:
    """The agent starts with the gateway: a program that is not there is a mistake in the
    settings, said before anything starts. (pi starts one per conversation; ``slashgate
    check`` reports either on its own line.)
    """
    problem = missing_program(program(settings.acp_command))
    return f"{settings.named('acp_command')}: {problem}" if problem else None
