"""The app's settings model subclasses every channel's and every runtime's settings class: a
validator (or a method) defined under one name in two of them would be one attribute of the
composed class, and the later base's would silently replace the other's, whose rule would never
run. ``compose`` refuses such parts, naming both; the app's model keeps every rule of each.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError, field_validator

from gateway.runtimes.workspace import AgentSettings
from gateway.settings import CoreSettings
from slashgate.composition import Settings, compose
from slashgate.registry import plugs


class First(CoreSettings):
    first_name: str = ""

    @field_validator("first_name")
    @classmethod
    def _is_lower(cls, value: str) -> str:
        return value.lower()


class Second(CoreSettings):
    second_name: str = ""

    @field_validator("second_name")
    @classmethod
    def _is_lower(cls, value: str) -> str:
        raise ValueError("second's rule")


class Renamer(CoreSettings):
    def named(self, name: str) -> str:
        return name.upper()


def _lower(cls: type, value: Any) -> Any:
    return value


def test_two_parts_with_a_validator_of_one_name_are_refused_naming_both() -> None:
    with pytest.raises(TypeError, match=r"_is_lower in First and Second"):
        compose("Both", [First, Second], {})


def test_a_part_that_redefines_a_method_of_another_is_refused() -> None:
    with pytest.raises(TypeError, match=r"named in CoreSettings and Renamer"):
        compose("Renamed", [CoreSettings, Renamer], {})


def test_a_validator_of_the_composition_must_not_take_a_parts_name() -> None:
    with pytest.raises(TypeError, match=r"_is_lower in Mine and First"):
        compose("Mine", [First], {"_is_lower": field_validator("host")(_lower)})


def test_composed_parts_keep_every_rule() -> None:
    model = compose("Kept", [First, AgentSettings, CoreSettings], {})
    assert model(first_name="ADA").first_name == "ada"
    with pytest.raises(ValidationError, match="needs redis_url"):
        model(store="redis")


def _function(decorator: Any) -> Any:
    """A validator's function, whichever class a classmethod is bound to."""
    return getattr(decorator.func, "__func__", decorator.func)


def test_every_validator_of_every_plugs_settings_runs_in_the_app_settings() -> None:
    composed = Settings.__pydantic_decorators__
    kinds = ("field_validators", "model_validators", "validators")
    present = {name: _function(d) for kind in kinds for name, d in getattr(composed, kind).items()}
    for model in {CoreSettings, *(plug.settings for plug in plugs())}:
        decorators = model.__pydantic_decorators__
        for kind in kinds:
            for name, decorator in getattr(decorators, kind).items():
                assert present.get(name) is _function(decorator), (model.__qualname__, name)
    assert "_runtime_is_known" in present and "_slack_is_wholly_set" in present
