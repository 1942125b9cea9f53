"""Settings named in a message the way the user gives them: ``SLASHGATE_TELEGRAM_MODE=polling``
to whoever set the Telegram channel in the environment, ``[telegram] mode = "polling"`` to
whoever set it in the TOML file.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from typing import Any

from gateway.settings import ENV_PREFIX
from gateway.validation import Spelling


def spelling(
    fields: Collection[str],
    given: Iterable[str],
    file: str | None,
    spelled: dict[str, str],
) -> Spelling:
    """How to spell a setting of ``fields``: as the user gave it; else as they gave the others
    of its section (``telegram_*``); else in the file when they wrote settings there.
    ``given``: the variables set (in the environment or the env file).
    """
    variables = {variable.upper() for variable in given}

    def in_environment(name: str) -> bool:
        variable = ENV_PREFIX + name.upper()
        return variable in variables or f"{variable}_FILE" in variables

    def from_environment(name: str) -> bool:
        if in_environment(name) or name in spelled:
            return in_environment(name)
        section = [n for n in fields if n.split("_")[0] == name.split("_")[0]]
        if any(map(in_environment, section)):
            return True
        if any(n in spelled for n in section):
            return False
        return file is None or not spelled  # nothing of it given: where the user writes

    def spell(name: str, value: Any) -> str:
        if from_environment(name):
            said = value if isinstance(value, str) else json.dumps(value)
            return ENV_PREFIX + name.upper() + ("" if value is None else f"={said}")
        key = spelled.get(name) or _key(name, fields)
        return key if value is None else f"{key} = {json.dumps(value)}"

    return spell


def _key(name: str, fields: Collection[str]) -> str:
    """The key in the TOML file: ``[telegram] mode`` where a section holds it, else ``name``."""
    section, _, rest = name.partition("_")
    shared = sum(1 for n in fields if n.startswith(f"{section}_"))
    return f"[{section}] {rest}" if rest and shared > 1 else name
