"""The outbound pacing and Discord settings given hostile values: ``slashgate check`` refuses
each with one line that names the setting, exit status 2, never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slashgate.cli import main

KEY = "ab" * 32  # a public key's form: 64 hexadecimal characters
DISCORD = {"SLASHGATE_DISCORD_TOKEN": "t0ken", "SLASHGATE_DISCORD_PUBLIC_KEY": KEY}

RATES = [
    "SLASHGATE_TELEGRAM_RATE_GLOBAL",
    "SLASHGATE_TELEGRAM_RATE_PRIVATE",
    "SLASHGATE_TELEGRAM_RATE_GROUP",
    "SLASHGATE_SLACK_RATE_CHANNEL",
    "SLASHGATE_SLACK_RATE_UPDATE",
]
# The channel each rate belongs to, on (its pacer is made at start); polling: no secret.
ON = {
    "TELEGRAM": {"SLASHGATE_TELEGRAM_TOKEN": "123:abc", "SLASHGATE_TELEGRAM_MODE": "polling"},
    "SLACK": {"SLASHGATE_SLACK_BOT_TOKEN": "xoxb-1", "SLASHGATE_SLACK_SIGNING_SECRET": "s"},
}

# (environment, the start of the one line said after "slashgate: bad configuration: ")
MISTAKES: list[tuple[dict[str, str], str]] = [
    *(
        ({rate: value}, f"{rate}: {said}")
        for rate in RATES
        for value, said in [
            ("-1", "Input should be greater than or equal to 0"),
            ("1e-320", "must be 0 (no limit) or at least 0.001"),
            ("nan", "Input should be a finite number"),
            ("inf", "Input should be a finite number"),
            ("1e400", "Input should be a finite number"),  # past a float: infinite
            ("fast", "Input should be a valid number"),
            ("", "Input should be a valid number"),
        ]
    ),
    *(
        ({"SLASHGATE_DISCORD_EDIT_INTERVAL": value}, f"SLASHGATE_DISCORD_EDIT_INTERVAL: {said}")
        for value, said in [
            ("0", "Input should be greater than 0"),
            ("-1", "Input should be greater than 0"),
            ("nan", "Input should be a finite number"),
            ("inf", "Input should be a finite number"),
        ]
    ),
    ({"SLASHGATE_DISCORD_TOKEN": "t0ken"}, "SLASHGATE_DISCORD_PUBLIC_KEY is not set"),
    ({"SLASHGATE_DISCORD_PUBLIC_KEY": KEY}, "SLASHGATE_DISCORD_TOKEN is not set"),
    ({**DISCORD, "SLASHGATE_DISCORD_TOKEN": ""}, "SLASHGATE_DISCORD_TOKEN is not set"),
    ({**DISCORD, "SLASHGATE_DISCORD_PUBLIC_KEY": KEY[:-1]}, "SLASHGATE_DISCORD_PUBLIC_KEY: must"),
    (
        {"SLASHGATE_DISCORD_GATEWAY": "true"},
        "SLASHGATE_DISCORD_GATEWAY is set but SLASHGATE_DISCORD_TOKEN is not",
    ),
    (
        {**DISCORD, "SLASHGATE_DISCORD_API_BASE": "discord.com/api/v10"},
        "SLASHGATE_DISCORD_API_BASE: must be an http:// or https:// URL",
    ),
    (
        {**DISCORD, "SLASHGATE_DISCORD_API_BASE": "https://"},
        "SLASHGATE_DISCORD_API_BASE: must be an http:// or https:// URL",
    ),
    *(
        (
            {**DISCORD, "SLASHGATE_DISCORD_UMBRELLA_COMMAND": value},
            f"SLASHGATE_DISCORD_UMBRELLA_COMMAND: must not be the gateway's command /{name}",
        )
        for value, name in [
            ("help", "help"),
            ("new", "new"),
            ("/Cancel", "cancel"),
            ("status", "status"),
            ("mode", "mode"),
        ]
    ),
    ({"SLASHGATE_DISCORD_GUILD_IDS": "[-1]"}, "SLASHGATE_DISCORD_GUILD_IDS[0]: Input should be"),
    ({"SLASHGATE_DISCORD_GUILD_IDS": "123"}, "SLASHGATE_DISCORD_GUILD_IDS: Input should be"),
]


@pytest.mark.parametrize(("env", "said"), MISTAKES, ids=[repr(e) for e, _ in MISTAKES])
def test_a_hostile_setting_is_one_line_naming_it(
    env: dict[str, str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in [n for n in os.environ if n.upper().startswith("SLASHGATE_")]:
        monkeypatch.delenv(name)
    # No platform is reached: a check that went on would stop at the first refusal.
    monkeypatch.setenv("SLASHGATE_STORE", "memory")
    monkeypatch.setenv("SLASHGATE_DISCORD_API_BASE", "http://127.0.0.1:9/api/v10")
    for channel, settings in ON.items():
        if any(f"_{channel}_" in name for name in env):
            for name, value in settings.items():
                monkeypatch.setenv(name, value)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert main(["check"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"slashgate: bad configuration: {said}"), lines[0]
