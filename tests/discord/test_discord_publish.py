"""``slashgate discord sync``'s work: the inventory published without serving, once."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from pydantic import SecretStr

from channels.discord.publish import publish_commands
from slashgate.cli import main
from slashgate.inventory import effective_inventory
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
        inventory = await effective_inventory(settings, parity_runtime(), "discord", "sync")
        said = await publish_commands(settings, inventory)
        assert said.endswith("published globally (1 of 1 written)")
        said = await publish_commands(settings, inventory)
        assert "already published globally" in said
    assert len(fake.writes("PUT")) == 1
    names = {c["name"] for c in fake.commands["global"]}
    assert {"agent", "help", "deploy", "pr-review"} <= names


async def test_the_cli_publishes_and_says_what_it_did(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.delenv("SLASHGATE_CONFIG", raising=False)
    monkeypatch.setenv("SLASHGATE_STATE_PATH", str(tmp_path / "state.sqlite3"))
    assert await asyncio.to_thread(main, ["discord", "sync"]) == 2  # no token, no key
    assert "discord sync needs discord_token and discord_public_key" in capsys.readouterr().err
    async with fake_discord() as fake:
        monkeypatch.setenv("SLASHGATE_DISCORD_TOKEN", BOT_TOKEN)
        monkeypatch.setenv("SLASHGATE_DISCORD_PUBLIC_KEY", PUBLIC_KEY)
        monkeypatch.setenv("SLASHGATE_DISCORD_API_BASE", fake.api_base)
        # The CLI runs its own event loop: in a thread, beside the fake's.
        assert await asyncio.to_thread(main, ["discord", "sync"]) == 0
    said = capsys.readouterr().out
    assert "commands published globally (1 of 1 written)" in said
    # The embedded demo runtime's inventory, host commands first, the umbrella before them.
    assert [c["name"] for c in fake.commands["global"]][:3] == ["agent", "help", "new"]


async def test_a_guild_discord_refuses_leaves_the_others_published_and_is_tried_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, "slashgate.discord")
    async with fake_discord() as fake:
        settings = make_settings(
            discord_token=SecretStr(BOT_TOKEN),
            discord_public_key=PUBLIC_KEY,
            discord_api_base=fake.api_base,
            discord_guild_ids=(111, 222),
            state_path=tmp_path / "state.sqlite3",
        )
        fake.refuse_once.add("111")
        inventory = await effective_inventory(settings, parity_runtime(), "discord", "sync")
        with pytest.raises(RuntimeError, match=r"guild\(s\) 111 \(1 of 2 written"):
            await publish_commands(settings, inventory)
        assert "agent" in [c["name"] for c in fake.commands["222"]]
        assert "111" not in fake.commands
        said = await publish_commands(settings, inventory)  # the refused one, again
        assert said.endswith("published 2 guild(s) (1 of 2 written)")
    assert [c["name"] for c in fake.commands["111"]] == [c["name"] for c in fake.commands["222"]]
    failed = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert failed == [
        "publishing the Discord commands of guild 111 failed: HTTP 403 Missing Access"
    ]
