"""The env file: ``slashgate serve``, ``check`` and the other commands read ``.env`` in the
working folder (or ``--env-file FILE``) through pydantic-settings' dotenv source; the
environment wins over it, and it wins over the TOML file (README, "Configuration").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slashgate.cli import main
from slashgate.config import ConfigError, load_settings
from tests.http import STARTUP
from tests.test_secret_files import secret

# A developer's SLASHGATE_* variables would be read too.
pytestmark = pytest.mark.usefixtures("no_settings_from_the_environment")


def test_the_environment_wins_over_the_env_file_which_wins_over_the_toml_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = secret(tmp_path / "slashgate.toml", "port = 1001\nrun_timeout = 7\nmax_queue = 3\n")
    env_file = secret(
        tmp_path / ".env",
        "# compose reads the same file\nCOMPOSE_PROJECT_NAME=bots\n"
        "export SLASHGATE_PORT=1002\nSLASHGATE_RUN_TIMEOUT=8\n"
        'SLASHGATE_INTERACTIVE_ONLY=["settings"]\n',
    )
    monkeypatch.setenv("SLASHGATE_PORT", "1003")
    settings = load_settings(config, env_file)
    assert settings.port == 1003  # the environment
    assert settings.run_timeout == 8 and settings.interactive_only == ["settings"]  # .env
    assert settings.max_queue == 3  # the TOML file
    assert settings.named("port") == "SLASHGATE_PORT"
    assert settings.named("run_timeout") == f"{env_file}: SLASHGATE_RUN_TIMEOUT"
    assert settings.named("max_queue") == f"{config}: max_queue"


def test_a_secret_follows_the_same_order_as_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = secret(tmp_path / "token", "from-a-file-0123\n")
    config = secret(tmp_path / "slashgate.toml", f'[webhook]\ntoken_file = "{token}"\n')
    env_file = secret(tmp_path / ".env", "SLASHGATE_WEBHOOK_TOKEN=from-the-env-file\n")
    settings = load_settings(config, env_file)
    assert settings.webhook_token is not None
    assert settings.webhook_token.get_secret_value() == "from-the-env-file"
    assert settings._secrets_in_clear == {env_file: ("webhook_token",)}
    monkeypatch.setenv("SLASHGATE_WEBHOOK_TOKEN_FILE", str(token))
    settings = load_settings(config, env_file)
    assert settings.webhook_token is not None
    assert settings.webhook_token.get_secret_value() == "from-a-file-0123"
    assert settings.named("webhook_token") == "SLASHGATE_WEBHOOK_TOKEN_FILE"
    assert settings._secrets_in_clear == {}


def test_mistakes_in_the_env_file_name_it(tmp_path: Path) -> None:
    env_file = secret(
        tmp_path / "bot.env",
        'SLASHGATE_PROT=9000\nSLASHGATE_ALLOWED_HOSTS=example.com\nSLASHGATE_CONFIG="no.toml"\n',
    )
    with pytest.raises(ConfigError) as refused:
        load_settings(None, env_file)
    assert refused.value.problems == [
        f"{env_file}: SLASHGATE_PROT is not a setting; did you mean SLASHGATE_PORT?",
        f"{env_file}: SLASHGATE_ALLOWED_HOSTS must be a list in JSON, e.g. "
        'SLASHGATE_ALLOWED_HOSTS=\'["a", "b"]\'',
        f"no.toml: no such file (named by {env_file}: SLASHGATE_CONFIG)",
    ]
    secret(env_file, "SLASHGATE_PORT=eighty\n")
    with pytest.raises(ConfigError) as refused:
        load_settings(None, env_file)
    assert refused.value.problems == [
        f"{env_file}: SLASHGATE_PORT: Input should be a valid integer, unable to parse string "
        "as an integer"
    ]


def test_check_reads_dot_env_in_the_working_folder_under_the_environment(
    tmp_path: Path,
) -> None:
    secret(tmp_path / ".env", "SLASHGATE_WEBCHAT=false\nSLASHGATE_STORE=sqlite\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    checked = subprocess.run(
        [sys.executable, "-m", "slashgate", "check"],
        cwd=tmp_path, env={**clean, "SLASHGATE_STORE": "memory"},
        capture_output=True, text=True, timeout=STARTUP,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[0] == "config: ok (runtime embedded; channels webhook)"  # no web chat: .env
    assert "store memory: ok (memory store answers)" in lines  # the environment's store


def test_an_env_file_named_must_be_there(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--env-file", "missing.env"]) == 2
    assert capsys.readouterr().err == (
        "slashgate: bad configuration: missing.env: no such file (named by --env-file)\n"
    )
