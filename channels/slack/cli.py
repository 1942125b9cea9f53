"""``slashgate slack manifest``: the Slack app manifest (JSON) for the effective inventory,
printed for Slack's "Create New App -> From a manifest". The registry's plug brings it to the
command line.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from contract import Command

from .manifest import build_manifest, request_url
from .settings import SlackSettings


def manifest_problem(settings: SlackSettings) -> str | None:
    """The public URL missing in HTTP mode, said before the runtime is built."""
    try:
        request_url(settings)
    except ValueError as exc:
        return str(exc)
    return None


async def manifest(
    settings: SlackSettings, inventory: Callable[[], Awaitable[tuple[Command, ...]]]
) -> int:
    print(json.dumps(build_manifest(await inventory(), settings), indent=2, ensure_ascii=False))
    return 0
