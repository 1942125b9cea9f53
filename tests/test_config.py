"""Settings: a TOML file with sections, the environment on top, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.config import load_settings


def test_file_sections_flatten_and_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "slashgate.toml"
    config.write_text(
        'port = 9000\nrun_timeout = 30\n[telegram]\ntoken = "from-file"\nmode = "polling"\n'
        '[catalog]\nbusy = "Busy, try /{name} later."\n'
    )
    monkeypatch.setenv("SLASHGATE_RUN_TIMEOUT", "5")
    settings = load_settings(config, port=None)
    assert settings.port == 9000 and settings.run_timeout == 5.0
    assert settings.telegram_mode == "polling"
    assert (
        settings.telegram_token is not None
        and settings.telegram_token.get_secret_value() == "from-file"
    )
    assert "from-file" not in repr(settings), "secrets never show in a repr or a log line"
    assert settings.catalog == {"busy": "Busy, try /{name} later."}


def test_unknown_or_bad_values_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("no_such_setting = 1\n")
    with pytest.raises(ValidationError):
        load_settings(config)
    config.write_text('busy_policy = "sometimes"\n')
    with pytest.raises(ValidationError):
        load_settings(config)
    config.write_text('[catalog]\nbusyy = "typo"\n')
    with pytest.raises(ValidationError):
        load_settings(config)


def test_cli_reports_bad_configuration_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gateway.cli import main

    config = tmp_path / "bad.toml"
    config.write_text("run_timeout = -1\n")
    assert main(["serve", "--config", str(config)]) == 2
    assert "bad configuration" in capsys.readouterr().err
    config.write_text('runtime = "electric"\n[electric]\nid_prefix = "has/slash"\n')
    assert main(["serve", "--config", str(config)]) == 2
    assert "bad configuration: electric_id_prefix" in capsys.readouterr().err


def test_cli_reports_a_port_in_use_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from gateway.cli import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("slashgate: cannot start:") and "Traceback" not in err
