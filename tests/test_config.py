"""Settings: a TOML file with sections, the environment on top, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from slashgate.config import ConfigError, load_settings


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
    """One ConfigError for them all (tests/test_config_errors.py has what each says)."""
    config = tmp_path / "bad.toml"
    for text in (
        "no_such_setting = 1\n",
        'busy_policy = "sometimes"\n',
        '[catalog]\nbusyy = "x"\n',
    ):
        config.write_text(text)
        with pytest.raises(ConfigError) as refused:
            load_settings(config)
        assert len(refused.value.problems) == 1 and str(config) in str(refused.value)


def test_cli_reports_bad_configuration_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from slashgate.cli import main

    config = tmp_path / "bad.toml"
    config.write_text("run_timeout = -1\n")
    assert main(["serve", "--config", str(config)]) == 2
    assert "bad configuration" in capsys.readouterr().err
    config.write_text('runtime = "electric"\n[electric]\nid_prefix = "has/slash"\n')
    assert main(["serve", "--config", str(config)]) == 2
    assert "bad configuration: electric_id_prefix" in capsys.readouterr().err


def test_cli_reports_a_port_in_use_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from slashgate.cli import main

    monkeypatch.setenv("SLASHGATE_STORE", "memory")  # no state file in the working folder

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    # The start-up parts log a line each before; the failure itself is one line, the last.
    assert err.splitlines()[-1].startswith("slashgate: cannot start:") and "Traceback" not in err


def test_the_manifest_needs_the_public_url_unless_socket_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from slashgate.cli import main

    monkeypatch.delenv("SLASHGATE_CONFIG", raising=False)
    assert main(["slack", "manifest"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("slashgate: bad configuration: slack_public_url is not set")
    assert "example.invalid" not in err
    monkeypatch.setenv("SLASHGATE_SLACK_APP_TOKEN", "xapp-1")  # before the app exists
    assert main(["slack", "manifest"]) == 0
    assert '"socket_mode_enabled": true' in capsys.readouterr().out


def test_a_right_catalog_and_a_lower_case_log_level_are_accepted(tmp_path: Path) -> None:
    config = tmp_path / "slashgate.toml"
    config.write_text(
        'log_level = "debug"\n[catalog]\nunsupported = "No /{name} here, {{sorry}}"\n'
        'plain_generic = "Failed: {error!r}"\n'
    )
    settings = load_settings(config)
    assert settings.log_level == "DEBUG"
    assert settings.catalog["unsupported"] == "No /{name} here, {{sorry}}"


def test_bare_slashgate_prints_help_and_version_prints_the_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from importlib.metadata import version

    from slashgate.cli import main

    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: slashgate") and "serve" in out and "slack" in out
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"slashgate {version('slashgate')}"
