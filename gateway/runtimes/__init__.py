"""Runtime backends behind the runtime port (``base``). The app's registry
(``slashgate/registry.py``) chooses one by the ``runtime`` setting; ``load_runtime`` is the
user's own (``runtime = "package.module:name"``).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

from .base import AgentInfo, Runtime, RuntimeSession, SessionInfo, Turn

__all__ = [
    "AgentInfo",
    "Runtime",
    "RuntimeSession",
    "SessionInfo",
    "Turn",
    "load_runtime",
]

# ``runtime = "package.module:name"``: a runtime of the user's own.
SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def load_runtime(spec: str) -> Runtime:
    """``package.module:name``: a Runtime (a ``slashgate.Bot``, say) or a callable that
    returns one. The working directory is importable, as ``python -m`` would make it.
    """
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        raise ValueError(f"runtime: {spec!r} is not package.module:name")
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
