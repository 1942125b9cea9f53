"""Runtime backends behind the runtime port (``base``), chosen by ``Settings.runtime``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Runtime, RuntimeSession, SessionInfo, Turn

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["Runtime", "RuntimeSession", "SessionInfo", "Turn", "build_runtime"]


def build_runtime(settings: Settings) -> Runtime:
    """The configured backend. Imports lazily so that an unused backend costs nothing."""
    if settings.runtime == "embedded":
        from .embedded import DEMO_ENTITY, EmbeddedRuntime

        return EmbeddedRuntime(DEMO_ENTITY)
    if settings.runtime == "acp":
        from .acp import AcpRuntime

        return AcpRuntime(
            settings.acp_command, settings.acp_cwd, settings.acp_env, settings.acp_auth_method
        )
    if settings.runtime == "pi":
        from .pi import PiRuntime

        return PiRuntime(
            settings.pi_command,
            settings.pi_cwd,
            settings.pi_env,
            settings.pi_pool_size,
            settings.pi_idle_ttl,
        )
    if settings.runtime == "electric":
        from .electric import ElectricRuntime

        return ElectricRuntime(settings)
    raise ValueError(f"unknown runtime {settings.runtime!r}")
