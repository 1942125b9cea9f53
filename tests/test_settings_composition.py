"""The settings model is every channel's settings class composed by inheritance: a validator
defined under one name in two of them would silently shadow one (the later base's wins), so
one of the two rules would never run. Each name must be defined once.
"""

from __future__ import annotations

from collections import defaultdict

from gateway.settings import CoreSettings
from slashgate.config import Settings
from slashgate.registry import CHANNELS


def _own_validators(model: type) -> set[str]:
    """The validator names ``model`` itself defines (not those it inherits)."""
    decorators = model.__pydantic_decorators__  # type: ignore[attr-defined]
    kinds = (decorators.field_validators, decorators.model_validators, decorators.validators)
    prefix = model.__qualname__ + "."
    return {
        name
        for kind in kinds
        for name, found in kind.items()
        if getattr(found.func, "__qualname__", "").startswith(prefix)
    }


def test_no_two_settings_classes_define_a_validator_of_one_name() -> None:
    where: dict[str, set[str]] = defaultdict(set)
    for model in {CoreSettings, *(plug.settings for plug in CHANNELS)}:
        for name in _own_validators(model):
            where[name].add(model.__qualname__)
    shadowed = {name: sorted(models) for name, models in where.items() if len(models) > 1}
    assert not shadowed, f"validators defined in more than one settings class: {shadowed}"


def test_the_check_sees_each_classs_own_validators() -> None:
    assert "_redis_has_a_url" in _own_validators(CoreSettings)
    assert not _own_validators(CoreSettings) & _own_validators(Settings)


def test_every_validator_of_every_class_runs_in_the_composed_model() -> None:
    composed = Settings.__pydantic_decorators__
    kinds = (composed.field_validators, composed.model_validators, composed.validators)
    present = {name for kind in kinds for name in kind}
    for model in {CoreSettings, *(plug.settings for plug in CHANNELS)}:
        assert _own_validators(model) <= present, model.__qualname__
