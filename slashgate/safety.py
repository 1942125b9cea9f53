"""Settings that leave something open (docs/security.md): one line each, logged as a warning
at start and printed by ``slashgate check``. None of them stops the gateway: each can be
what the operator meant, and the line says what it opens.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from gateway.runtimes.workspace import AgentSettings
from gateway.settings import CoreSettings
from gateway.state import state_file

from .registry import agent_runtime, settings_as


def unsafe_settings(settings: CoreSettings) -> list[str]:
    """A line for each setting of ``settings`` that leaves something open."""
    found: list[str] = []
    if settings.attachment_allow_private_urls:
        found.append(
            f"{settings.named('attachment_allow_private_urls')} is on: POST /v1/messages "
            "fetches attachment URLs on loopback and private networks, and over plain http "
            "(internal services, cloud metadata); it is meant for tests"
        )
    if runtime := agent_runtime(settings):
        found += _agent(settings_as(AgentSettings, settings), runtime)
    if logging.getLevelName(settings.library_log_level) < logging.INFO:
        found.append(
            f"{settings.named('library_log_level')} is {settings.library_log_level}: with "
            "log_level there too, the libraries log message texts and request bodies"
        )
    found += _readable_secrets(settings)
    return found


def _agent(settings: AgentSettings, runtime: str) -> list[str]:
    found: list[str] = []
    cwd = settings.agent_cwd(runtime)
    exposed = [p for p in _gateway_files(settings) if _within(p, cwd)]
    if exposed or _within(Path.cwd(), cwd):
        holds = ", ".join(str(p) for p in exposed) or "the gateway's working folder"
        found.append(
            f"{settings.named(f'{runtime}_cwd')} is {cwd}, which holds {holds}: the agent "
            "works there and its @file: references reach them; leave it unset (the "
            "workspace setting) or name a folder of the agent's own"
        )
    if os.geteuid() == 0 and settings.agent_user is None:
        found.append(
            "the gateway runs as root and agent_user is not set: the agent runs as root too, "
            "and can read the gateway's environment, memory, state and settings"
        )
    return found


def _gateway_files(settings: CoreSettings) -> list[Path]:
    """The gateway's own files: its settings, its state, the files its secrets come from."""
    files = [f for f in (settings._config_file, settings._env_file) if f is not None]
    if settings.store == "sqlite":
        files.append(state_file(settings))
    return files + list(settings._secret_files.values())


def _within(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.expanduser().resolve())
    except (OSError, RuntimeError):
        return False


def _readable_secrets(settings: CoreSettings) -> list[str]:
    """Secrets in files that other users may read: the settings file or the env file with
    secrets in clear, and the secrets' own files.
    """
    found: list[str] = []
    for file, names in settings._secrets_in_clear.items():
        if _others_read(file):
            found.append(
                f"{file} holds {', '.join(names)} and other users may read it: chmod 600 it, "
                "or give the secrets as files of their own (SLASHGATE_<NAME>_FILE)"
            )
    for name, path in settings._secret_files.items():
        if _others_read(path):
            found.append(f"{path} holds {name} and other users may read it: chmod 600 it")
    return found


def _others_read(path: Path) -> bool:
    try:
        return bool(path.stat().st_mode & 0o044)
    except OSError:
        return False
