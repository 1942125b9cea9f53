"""``slashgate discord sync``'s work: the inventory published without serving, once."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from channels.discord.publish import publish_commands
from tests.conftest import make_settings, parity_runtime

from .fake import BOT_TOKEN, fake_discord
from .interactions import PUBLIC_KEY


async def test_publishing_by_hand_writes_once_then_finds_the_list_published(tmp_path: Path):
    async with fake_discord() as fake:
        settings = make_settings(
            discord_token=SecretStr(BOT_TOKEN),
            discord_public_key=PUBLIC_KEY,
            discord_api_base=fake.api_base,
            state_path=tmp_path / "state.sqlite3",
        )
        said = await publish_commands(settings, parity_runtime())
        assert said.endswith("published globally (1 of 1 written)")
        said = await publish_commands(settings, parity_runtime())
        assert "already published globally" in said
    assert len(fake.writes("PUT")) == 1
    names = {c["name"] for c in fake.commands["global"]}
    assert {"agent", "help", "deploy", "pr-review"} <= names
