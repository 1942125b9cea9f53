"""examples/slashgate.toml documents every setting with its default, and loads."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from slashgate.config import Settings, flatten_toml, load_settings
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "slashgate.toml"
# "# name = value": a setting left unset (or chosen) by default; prose comments never look so.
COMMENTED_SETTING = re.compile(r"^# ([a-z_]+ = .*)$", re.M)


def defaults() -> dict[str, object]:
    return {n: f.get_default(call_default_factory=True) for n, f in Settings.model_fields.items()}


# A developer's SLASHGATE_* variables would be read too.
pytestmark = pytest.mark.usefixtures("no_settings_from_the_environment")


def test_as_it_is_the_example_states_the_defaults() -> None:
    settings = load_settings(EXAMPLE)
    assert settings.model_dump() == Settings.model_validate(defaults()).model_dump()


def test_every_setting_is_in_the_example_once_and_each_loads(tmp_path: Path) -> None:
    everything = COMMENTED_SETTING.sub(r"\1", EXAMPLE.read_text(encoding="utf-8"))
    named = set(flatten_toml(tomllib.loads(everything)))  # a setting twice fails to parse
    missing = set(Settings.model_fields) - named
    assert not missing, f"add these settings to examples/slashgate.toml: {sorted(missing)}"
    config = tmp_path / "all.toml"
    config.write_text(everything, encoding="utf-8")
    settings = load_settings(config)  # unknown names and bad values are refused here
    assert settings.telegram_token is not None and settings.slack_app_token is not None
    assert settings.catalog["busy"].startswith("Slash command /{name}")
