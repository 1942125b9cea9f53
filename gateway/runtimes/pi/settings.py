"""The pi runtime's settings (``[pi]``, ``SLASHGATE_PI_*``), with ``runtime = "pi"``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr

from ..workspace import AgentSettings


class PiSettings(AgentSettings):
    # `pi --mode rpc`, one process per conversation.
    pi_command: list[str] = Field(default_factory=lambda: ["pi", "--mode", "rpc"])
    """With `runtime = "pi"`: pi's command line, one process per conversation."""
    pi_cwd: Path | None = None
    """pi's working folder; unset: `workspace`."""
    pi_env: dict[str, SecretStr] = Field(default_factory=dict)
    """Extra environment of pi, revealed only to it."""
    pi_pool_size: int = Field(8, ge=1)
    """The most pi processes at once."""
    pi_idle_ttl: float = Field(600.0, gt=0)
    """Seconds before an idle pi process is stopped."""
