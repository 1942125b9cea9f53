"""Pydantic validation errors as one readable line, for configuration and request bodies."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

# An http:// or https:// URL as settings take one (an API's base); else the first call fails
# with aiohttp's words, which do not name the setting.
HTTP_URL = re.compile(r"https?://[^/\s?#]+(/\S*)?")
_PREFIX = "Value error, "  # pydantic's prefix for a validator's own message
Spelling = Callable[[str, Any], str]  # (a setting's name, a value to give it or None) -> text


def plain(name: str, value: Any) -> str:
    """A setting by its own name: ``telegram_mode = "polling"``."""
    return name if value is None else f"{name} = {json.dumps(value)}"


class SettingsRule(ValueError):
    """A rule over settings broken: ``text`` names them as ``{placeholders}``, each a setting
    (``"telegram_secret"``) or a setting and the value to give it (``("telegram_mode",
    "polling")``). Plain names by default; ``said`` spells them the way the user gives
    settings (the environment or the TOML file: slashgate/spelling.py).
    """

    def __init__(self, text: str, **settings: str | tuple[str, Any]) -> None:
        self.text = text
        self.settings = {k: v if isinstance(v, tuple) else (v, None) for k, v in settings.items()}
        super().__init__(self.said())

    def said(self, spelling: Spelling = plain) -> str:
        return self.text.format(**{k: spelling(*named) for k, named in self.settings.items()})


def describe_validation_error(exc: ValidationError, root: str = "") -> str:
    """One sentence per problem: ``text: Input should be a valid string``; a problem of the
    whole object is named ``root`` (or has no name when ``root`` is empty).
    """
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or root
        message = error["msg"].removeprefix(_PREFIX)
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
