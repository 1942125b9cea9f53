"""The Discord settings: on with both the token and the public key, a half-set channel or a
key that is not one refused with a line that says what to set.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from channels.discord.settings import DiscordSettings, enabled

KEY = "ab" * 32


def test_on_only_with_the_token_and_the_public_key() -> None:
    assert not enabled(DiscordSettings())
    assert enabled(DiscordSettings(discord_token="t", discord_public_key=KEY))


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"discord_token": "t"}, "discord_public_key is not set"),
        ({"discord_public_key": KEY}, "discord_token is not set"),
        ({"discord_token": "t", "discord_public_key": "xyz"}, "64 hexadecimal characters"),
        ({"discord_umbrella_command": "Ask Agent"}, "a Discord command name"),
    ],
)
def test_what_is_wrong_is_said(fields: dict[str, str], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        DiscordSettings(**fields)  # type: ignore[arg-type]


def test_the_umbrella_is_read_as_discord_writes_it() -> None:
    assert DiscordSettings(discord_umbrella_command="/Agent").discord_umbrella_command == "agent"
