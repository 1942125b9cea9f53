"""docs/configuration.md is the settings models' own description: every setting, as the models
have it, and nothing else."""

from __future__ import annotations

from pathlib import Path

from slashgate.config import Settings
from slashgate.settings_doc import descriptions, render

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
REGENERATE = "python -m slashgate.settings_doc > docs/configuration.md"


def test_every_setting_has_a_description() -> None:
    missing = [name for name, said in descriptions().items() if not said]
    assert not missing, f"give these settings a docstring under the field: {missing}"


def test_the_page_matches_the_settings_models() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        f"docs/configuration.md differs from the settings models: run `{REGENERATE}`"
    )


def test_the_page_names_every_setting_and_its_variable() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for name in Settings.model_fields:
        assert f"`SLASHGATE_{name.upper()}`" in page, name
