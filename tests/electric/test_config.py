"""Entity ids, principals and the runtime's configuration checks."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.runtimes import AgentInfo
from gateway.runtimes.electric.ids import MAX_ID, entity_id, escape, user_principal
from gateway.runtimes.electric.runtime import ElectricRuntime
from slashgate.config import Settings, load_settings
from slashgate.registry import build_runtime


def test_build_runtime_picks_electric():
    runtime = build_runtime(Settings(runtime="electric", electric_url="http://127.0.0.1:9/"))
    assert isinstance(runtime, ElectricRuntime)
    assert runtime.describe() == "electric (http://127.0.0.1:9, entity type assistant)"
    assert runtime.agent_info() == AgentInfo("assistant", "electric")  # the greeting's name


def test_credentials_in_the_url_are_not_shown():
    runtime = build_runtime(
        Settings(runtime="electric", electric_url="https://gw:s3cret@agents.example/base/")
    )
    assert runtime.describe() == "electric (https://agents.example/base, entity type assistant)"
    assert str(runtime.client.url("/x")) == "https://gw:s3cret@agents.example/base/x"


def test_readable_ids_for_usual_keys():
    assert entity_id("slashgate", "telegram:-100123") == "slashgate-telegram_3A-100123"
    assert entity_id("gw", "slack:T1/C2/1700000000.1") == "gw-slack_3AT1_2FC2_2F1700000000_2E1"
    assert user_principal("slack:T1/C2", "U123") == "user:slack:U123"
    assert user_principal("webhook:room", "a/b ü") == "user:webhook:a_2Fb_20_C3_BC"
    assert user_principal("webhook:room", "") == "user:webhook:"
    assert entity_id("gw", "webhook:\ud800") == "gw-webhook_3A_ED_A0_80"  # JSON allows it


@given(st.text(st.characters(exclude_categories=())), st.text())  # lone surrogates too
def test_ids_are_path_safe_and_injective(a: str, b: str):
    ids = entity_id("gw", a), entity_id("gw", b)
    for value in ids:
        assert len(value) <= MAX_ID
        assert all(c.isascii() and (c.isalnum() or c in "-_.") for c in value)
    assert (ids[0] == ids[1]) == (a == b)
    assert (escape(a) == escape(b)) == (a == b)


def test_the_same_user_id_on_two_channels_is_two_principals():
    # A webhook caller names its own user: it must not act as the Slack user of that id.
    assert user_principal("slack:T1/C2", "U123") != user_principal("webhook:c1", "U123")
    assert user_principal("slack:T1/C2", "U123") == user_principal("slack:T9/C9/1.2", "U123")


@given(st.text(), st.text(), st.text(), st.text())
def test_principals_are_header_safe_and_injective(
    channel_a: str, user_a: str, channel_b: str, user_b: str
):
    channel_a, channel_b = channel_a.replace(":", ""), channel_b.replace(":", "")
    a = user_principal(f"{channel_a}:room", user_a)
    b = user_principal(f"{channel_b}:other room", user_b)
    for value in (a, b):
        assert value.startswith("user:") and "/" not in value and value.isascii()
        assert len(value.split(":", 2)[2]) <= MAX_ID
    assert (a == b) == ((channel_a, user_a) == (channel_b, user_b))


def test_long_keys_are_hashed():
    key = "webhook:" + "x" * 500
    value = entity_id("gw", key)
    assert len(value) == MAX_ID and value.startswith("gw-webhook_3Axxx") and "." in value
    assert value != entity_id("gw", key + "y")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("electric_id_prefix", "a/b", "electric_id_prefix"),
        ("electric_id_prefix", "", "electric_id_prefix"),
        ("electric_principal", "robot:x", "electric_principal"),
        ("electric_principal", "user:a/b", "electric_principal"),
    ],
)
def test_bad_settings_are_refused_at_startup(field: str, value: str, message: str):
    with pytest.raises(ValueError, match=message):
        ElectricRuntime(Settings(runtime="electric", **{field: value}))


def test_the_documented_configuration_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    docs = Path(__file__).resolve().parents[2] / "docs" / "electric.md"
    toml = re.search(r"```toml\n(.*?)```", docs.read_text(encoding="utf-8"), re.S)
    assert toml is not None
    config = tmp_path / "slashgate.toml"
    config.write_text(toml.group(1), encoding="utf-8")
    for name in list(os.environ):
        if name.startswith("SLASHGATE_"):
            monkeypatch.delenv(name)
    settings = load_settings(config)
    assert (settings.runtime, settings.store, settings.electric_live) == (
        "electric",
        "sqlite",
        "sse",
    )
    assert settings.electric_principal == "service:slashgate"
    runtime = build_runtime(settings)
    assert runtime.describe() == "electric (http://127.0.0.1:4437, entity type assistant)"


def test_state_is_kept_in_sqlite_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch):
    for name in list(os.environ):
        if name.startswith("SLASHGATE_"):
            monkeypatch.delenv(name)
    assert Settings(runtime="electric").store == "sqlite"
    assert Settings(runtime="electric", store="memory").store == "memory"
    assert Settings().store == "sqlite"  # the journal is durable by default, for every runtime
    monkeypatch.setenv("SLASHGATE_STORE", "memory")
    assert Settings().store == "memory"


async def test_a_memory_store_is_announced_at_start(caplog: pytest.LogCaptureFixture):
    runtime = ElectricRuntime(Settings(runtime="electric", store="memory"))
    with caplog.at_level(logging.WARNING, logger="slashgate.electric"):
        await runtime.start()
        await runtime.stop()
    assert "state store in memory" in caplog.text
