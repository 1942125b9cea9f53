"""Runtime backends behind the runtime port (``base``), chosen by ``CoreSettings.runtime``."""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from .base import AgentInfo, Runtime, RuntimeSession, SessionInfo, Turn
from .workspace import AgentUser

if TYPE_CHECKING:
    from ..settings import CoreSettings

__all__ = [
    "AgentInfo",
    "Runtime",
    "RuntimeSession",
    "SessionInfo",
    "Turn",
    "build_runtime",
    "load_runtime",
]


def build_runtime(settings: CoreSettings) -> Runtime:
    """The configured backend. Imports lazily so that an unused backend costs nothing."""
    if settings.runtime == "embedded":
        from .embedded import demo_bot

        return demo_bot()
    if settings.runtime == "acp":
        from .acp import AcpRuntime

        return AcpRuntime(
            settings.acp_command,
            settings.agent_cwd("acp"),
            settings.acp_env,
            settings.acp_auth_method,
            settings.cancel_grace,
            workspace=settings.acp_cwd is None,
            user=agent_user(settings),
        )
    if settings.runtime == "pi":
        from .pi import PiRuntime

        return PiRuntime(
            settings.pi_command,
            settings.agent_cwd("pi"),
            settings.pi_env,
            settings.pi_pool_size,
            settings.pi_idle_ttl,
            settings.cancel_grace,
            workspace=settings.pi_cwd is None,
            user=agent_user(settings),
        )
    if settings.runtime == "electric":
        from .electric import ElectricRuntime

        return ElectricRuntime(settings)
    return load_runtime(settings.runtime)


def agent_user(settings: CoreSettings) -> AgentUser | None:
    """The user the agent runs as (``agent_user``); None: the gateway's own."""
    if settings.agent_user is None:
        return None
    return AgentUser.of(settings.agent_user, settings.named("agent_user"))


def load_runtime(spec: str) -> Runtime:
    """``package.module:name``: a Runtime (a ``slashgate.Bot``, say) or a callable that
    returns one. The working directory is importable, as ``python -m`` would make it.
    """
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        raise ValueError(f"runtime: {spec!r} is not embedded, acp, pi, electric or module:name")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # the user's module, whatever it raises: one line at start-up
        raise ValueError(
            f"runtime: cannot import {module_name} ({type(exc).__name__}: {exc})"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ValueError(f"runtime: {module_name} has no {attribute}")
        found = getattr(found, part)
    if callable(found) and not isinstance(found, Runtime):
        try:
            found = found()
        except Exception as exc:
            raise ValueError(f"runtime: {spec}() failed ({type(exc).__name__}: {exc})") from exc
    if not isinstance(found, Runtime):
        raise ValueError(
            f"runtime: {spec} is a {type(found).__name__}, not a Runtime "
            "(a slashgate.Bot, or a callable that returns one)"
        )
    return found
