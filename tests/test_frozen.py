"""``quick_init``: the faster ``__init__`` of a frozen, slotted dataclass behaves as the
generated one (parameters, defaults, factories, frozen, equality and hash)."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from gateway.frozen import quick_init
from gateway.inbound import InboundMessage, Reply


def fields() -> type:
    """A new class of the same fields, each call: one made a dataclass as it is, one quick."""

    class Fields:
        a: str
        b: int = 2
        c: list[int] = field(default_factory=list)
        d: str = field(default="d", kw_only=True)

    return Fields


Plain = dataclass(frozen=True, slots=True)(fields())
Quick = quick_init(dataclass(frozen=True, slots=True)(fields()))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("x",), {}), (("x", 5), {}), (("x", 5, [1]), {"d": "e"}), ((), {"a": "x", "c": [2]})],
)
def test_same_fields_as_the_generated_init(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)  # type: ignore[arg-type]
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert quick == Quick(*args, **kwargs) and Quick("x", 1) != Quick("x", 2)  # type: ignore[arg-type]
    assert hash(Reply("hi", slash=True)) == hash(Reply("hi", slash=True))


def test_same_signature_and_failures() -> None:
    assert str(inspect.signature(Quick)) == str(inspect.signature(Plain))
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick("x", 1, [], "positional d")  # type: ignore[misc]


def test_a_factory_makes_a_new_value_each_time() -> None:
    assert Quick("x").c is not Quick("x").c
    message = InboundMessage("webhook", "c", "u", "hi")
    assert message.meta == {} and message.meta is not InboundMessage("webhook", "c", "u", "hi").meta


def test_still_frozen() -> None:
    reply = Reply("hi", slash=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.text = "changed"  # type: ignore[misc]
    assert dataclasses.replace(reply, text="bye") == Reply("bye", slash=True)
