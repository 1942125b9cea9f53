"""Secrets read from files of their own (``SLASHGATE_TELEGRAM_TOKEN_FILE``, ``[telegram]
token_file``: the Docker and Kubernetes secrets convention), before the settings are
validated.
"""

from __future__ import annotations

import json
from typing import Any

MAX_SECRET_FILE = 64 * 1024  # bytes: a larger file is not a secret but a mistake


class SecretFile(str):
    """A secret setting's file, as the TOML file names it: read before the settings are
    validated.
    """


def read_secret(path: str, named: str, table: bool) -> tuple[Any, str | None]:
    """(the secret read from ``path``, None), or (None, the problem in a line naming the file
    and what named it). The text without its trailing line breaks (``echo`` writes one); a
    ``table`` setting (``acp_env``) is JSON there, as in its variable.
    """
    value, problem = _secret_text(path)
    if value is not None and table:
        try:
            value = json.loads(value)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            value, problem = None, 'not a table in JSON, e.g. {"KEY": "value"}'
    return value, None if problem is None else f"{path}: {problem} (named by {named})"


def _secret_text(path: str) -> tuple[str | None, str | None]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SECRET_FILE + 1)
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"
    if len(raw) > MAX_SECRET_FILE:
        return None, f"over {MAX_SECRET_FILE // 1024} KiB: not a secret"
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    return (text, None) if text.strip() else (None, "empty")
