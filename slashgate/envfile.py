"""The env file (``.env`` in the working folder, or ``--env-file FILE``): ``SLASHGATE_*``
variables kept in a file, as docker compose reads them: ``slashgate serve`` and
``docker compose up`` see the same settings. Read by pydantic-settings' own dotenv source
(python-dotenv's syntax: ``KEY=value``, quotes, ``export``, ``#`` comments); what it gives
sits between the environment, which wins, and the TOML file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, DotEnvSettingsSource

from gateway.settings import ENV_PREFIX

DEFAULT = Path(".env")  # read when it is there; one --env-file names must be there


@dataclass(frozen=True)
class EnvFile:
    """An env file as read: its path and its ``SLASHGATE_*`` variables as written there."""

    path: Path
    variables: dict[str, str]

    def settings(self, model: type[BaseSettings]) -> dict[str, Any]:
        """The settings of ``model`` the file gives, decoded as from the environment (a list
        or table from its JSON). Its other variables are ``variables``' to check.
        """
        given = DotEnvSettingsSource(model, env_file=self.path)()
        return {name: value for name, value in given.items() if name in model.model_fields}


def chosen(named: str | None) -> Path | None:
    """The env file to read: the one ``--env-file`` names, else ``.env`` when it is there."""
    if named is not None:
        return Path(named)
    return DEFAULT if DEFAULT.is_file() else None


def read_env_file(model: type[BaseSettings], path: Path) -> tuple[EnvFile | None, str | None]:
    """(the env file at ``path``, None), or (None, what is wrong with it in a line)."""
    if not path.is_file():
        return None, f"{path}: no such file (named by --env-file)"
    try:
        found = DotEnvSettingsSource(model, env_file=path, case_sensitive=True).env_vars
    except OSError as exc:
        return None, f"{path}: cannot read it: {exc.strerror or exc}"
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text"
    variables = {
        name: value
        for name, value in found.items()
        if value is not None and name.upper().startswith(ENV_PREFIX)
    }
    return EnvFile(path, variables), None
