"""The app's settings model: the gateway's own (``CoreSettings``), every channel's and every
runtime's of the registry, composed into one flat model.

Each part subclasses ``CoreSettings``, and the model subclasses every part, so that a channel
is given the one settings object as its own model (``registry.settings_as``). Inheriting
several classes has one trap: a validator (or any method) defined under one name in two parts
is one attribute of the composed class, and the later part's would silently replace the
other's, whose rule would never run. ``compose`` refuses such parts instead, naming both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import create_model, field_validator

from gateway.settings import CoreSettings

from .registry import plugs, unknown_runtime

# What pydantic and abc put in every model class's namespace: not the model's own.
_MADE_FOR_EVERY_MODEL = {"_abc_impl", "model_config", "model_post_init"}


def compose(
    name: str,
    parts: Iterable[type[CoreSettings]],
    validators: dict[str, Callable[..., Any]],
    doc: str = "",
) -> type[CoreSettings]:
    """One model of the ``parts``' fields and rules, and ``validators`` of its own. TypeError
    when two classes among them define one name (a validator, a method), which would drop one.
    """
    parts = list(dict.fromkeys(parts))
    # A part that another extends is in that one already (CoreSettings, AgentSettings).
    bases = tuple(p for p in parts if not any(o is not p and issubclass(o, p) for o in parts))
    owners: dict[str, list[str]] = {key: [name] for key in validators}
    classes = {c for base in bases for c in base.__mro__ if issubclass(c, CoreSettings)}
    for cls in sorted(classes, key=lambda c: c.__qualname__):
        for key in vars(cls).keys() - _MADE_FOR_EVERY_MODEL:
            if not key.startswith("__"):
                owners.setdefault(key, []).append(cls.__qualname__)
    shadowed = {key: owner for key, owner in owners.items() if len(owner) > 1}
    if shadowed:
        said = "; ".join(f"{key} in {' and '.join(owner)}" for key, owner in shadowed.items())
        raise TypeError(f"settings models define one name twice, one would be lost: {said}")
    return create_model(
        name, __base__=bases, __module__=__name__, __validators__=validators, __doc__=doc
    )


def _runtime_is_known(cls: type, value: str) -> str:
    if problem := unknown_runtime(value):
        raise ValueError(problem)
    return value


Settings = compose(
    "Settings",
    [CoreSettings, *(plug.settings for plug in plugs())],
    {"_runtime_is_known": field_validator("runtime")(_runtime_is_known)},
    "The gateway's settings and those of every channel and runtime in the registry.",
)
