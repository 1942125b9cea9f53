"""Secrets from files (``SLASHGATE_<NAME>_FILE``, ``[section] name_file``; docs/security.md),
and the secrets out of the gateway's environment once read (issue 32). The mistakes' words
are in tests/test_config_errors.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slashgate.config import SECRETS, ConfigError, load_settings, secret_variables
from tests.http import ROOT

# A developer's SLASHGATE_* variables would be read too.
pytestmark = pytest.mark.usefixtures("no_settings_from_the_environment")


def secret(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def test_every_secret_setting_can_come_from_a_file() -> None:
    assert set(SECRETS) == {
        "telegram_token", "telegram_secret", "slack_bot_token", "slack_signing_secret",
        "slack_app_token", "discord_token", "webhook_token", "redis_url", "acp_env", "pi_env",
        "matrix_access_token", "matrix_password", "matrix_pickle_key",
    }  # fmt: skip


def test_a_secret_is_read_from_the_file_a_variable_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = secret(tmp_path / "token", "123:abc\n")  # as `echo` writes it
    keys = secret(tmp_path / "keys.json", json.dumps({"GEMINI_API_KEY": "g-key"}))
    monkeypatch.setenv("SLASHGATE_TELEGRAM_TOKEN_FILE", str(token))
    monkeypatch.setenv("SLASHGATE_TELEGRAM_MODE", "polling")
    monkeypatch.setenv("SLASHGATE_ACP_ENV_FILE", str(keys))
    settings = load_settings()
    assert settings.telegram_token is not None
    assert settings.telegram_token.get_secret_value() == "123:abc"
    assert {k: v.get_secret_value() for k, v in settings.acp_env.items()} == {
        "GEMINI_API_KEY": "g-key"
    }
    assert settings.named("telegram_token") == "SLASHGATE_TELEGRAM_TOKEN_FILE"
    assert settings._secret_files == {"telegram_token": token, "acp_env": keys}


def test_the_settings_file_may_name_a_secrets_file_and_the_variable_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "slashgate.toml"
    config.write_text(
        f'[webhook]\ntoken_file = "{secret(tmp_path / "in-file", "from-the-file-0123")}"\n'
        '[slack]\nbot_token = "xoxb-in-clear"\nsigning_secret = "in-clear-too"\n',
        encoding="utf-8",
    )
    settings = load_settings(config)
    assert settings.webhook_token is not None
    assert settings.webhook_token.get_secret_value() == "from-the-file-0123"
    assert settings.named("webhook_token") == f"{config}: [webhook] token_file"
    assert settings._secrets_in_clear == {config: ("slack_bot_token", "slack_signing_secret")}
    monkeypatch.setenv("SLASHGATE_WEBHOOK_TOKEN_FILE", str(secret(tmp_path / "env", "env-0123")))
    monkeypatch.setenv("SLASHGATE_SLACK_BOT_TOKEN", "xoxb-from-the-environment")
    settings = load_settings(config)
    assert settings.webhook_token is not None
    assert settings.webhook_token.get_secret_value() == "env-0123"
    assert settings._secrets_in_clear == {config: ("slack_signing_secret",)}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "empty"),
        ("\n\n", "empty"),
        ("x" * (64 * 1024 + 1), "over 64 KiB: not a secret"),
    ],
)
def test_a_file_that_holds_no_secret_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, said: str
) -> None:
    path = secret(tmp_path / "token", content)
    monkeypatch.setenv("SLASHGATE_WEBHOOK_TOKEN_FILE", str(path))
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert refused.value.problems == [f"{path}: {said} (named by SLASHGATE_WEBHOOK_TOKEN_FILE)"]


def test_a_table_secret_that_is_not_a_json_table_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = secret(tmp_path / "env", "GEMINI_API_KEY=g-key\n")
    monkeypatch.setenv("SLASHGATE_PI_ENV_FILE", str(path))
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert refused.value.problems == [
        f'{path}: not a table in JSON, e.g. {{"KEY": "value"}} (named by SLASHGATE_PI_ENV_FILE)'
    ]
    assert "g-key" not in str(refused.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_file_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = secret(tmp_path / "token", "t0ken-t0ken")
    path.chmod(0)
    monkeypatch.setenv("SLASHGATE_WEBHOOK_TOKEN_FILE", str(path))
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert refused.value.problems == [
        f"{path}: cannot read it: Permission denied (named by SLASHGATE_WEBHOOK_TOKEN_FILE)"
    ]


def test_the_secret_variables_are_those_of_the_secret_settings() -> None:
    environ = {
        "SLASHGATE_TELEGRAM_TOKEN": "x",
        "slashgate_webhook_token": "x",
        "SLASHGATE_SLACK_APP_TOKEN_FILE": "/run/secrets/app",
        "SLASHGATE_ACP_ENV": "{}",
        "SLASHGATE_LOG_LEVEL": "DEBUG",
        "SLASHGATE_TELEGRAM_MODE": "polling",
        "HOME": "/root",
    }
    assert secret_variables(environ) == [
        "SLASHGATE_TELEGRAM_TOKEN",
        "slashgate_webhook_token",
        "SLASHGATE_SLACK_APP_TOKEN_FILE",
        "SLASHGATE_ACP_ENV",
    ]


# The command line, stopped where it would build the runtime: what is left of the environment
# once the settings are read, and whether the process may still be dumped.
PROBE = """
import ctypes, os, sys
from slashgate import cli

def probe(settings):
    print(sorted(k for k in os.environ if k.startswith("SLASHGATE_")))
    print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))  # PR_GET_DUMPABLE
    raise SystemExit(0)

cli.build_runtime = probe
cli.main(["check"])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_once_the_settings_are_read_the_secrets_leave_the_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    env.update(
        SLASHGATE_WEBHOOK_TOKEN="whk-0123456789abcdef",
        SLASHGATE_TELEGRAM_TOKEN_FILE=str(secret(tmp_path / "token", "123:abc")),
        SLASHGATE_TELEGRAM_MODE="polling",
        SLASHGATE_LOG_LEVEL="INFO",
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "['SLASHGATE_LOG_LEVEL', 'SLASHGATE_TELEGRAM_MODE']",
        "0",  # not dumpable: /proc/<pid>/environ and mem are root's
    ]
