"""Structural validation of composer_input, with the rules the Electric Agents server applies."""

from __future__ import annotations

import re
from typing import Any

from .models import ComposerInputPayload, SlashCommandNode, TextNode
from .utf16 import has_astral, utf16_len, utf16_slice

STRICT_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_VALUE_FIELD = {"file": "path", "symbol": "name", "branch": "name", "slash_command": "name"}


class ComposerInputError(ValueError):
    """A composer_input payload that a strict runtime would refuse (422)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def composer_input_problems(payload: Any, *, strict_names: bool = True) -> list[str]:
    """Every rule the payload breaks; an empty list when it is valid."""
    if not isinstance(payload, dict):
        return ["payload must be an object"]
    source = payload.get("source")
    if not isinstance(source, str):
        return ["payload.source must be a string"]
    nodes = payload.get("nodes")
    if nodes is None:
        return []
    if not isinstance(nodes, list):
        return ["payload.nodes must be an array"]
    # Without astral characters UTF-16 offsets are code point offsets: slice directly.
    astral = has_astral(source)
    length = utf16_len(source) if astral else len(source)
    problems: list[str] = []
    previous_end = 0
    for i, node in enumerate(nodes):
        where = f"nodes[{i}]"
        if not isinstance(node, dict):
            problems.append(f"{where} must be an object")
            continue
        kind = node.get("kind")
        if kind != "text" and kind not in _VALUE_FIELD:
            problems.append(f"{where}.kind {kind!r} is not a known node kind")
            continue
        start, end, raw = node.get("start"), node.get("end"), node.get("raw")
        # bool is an int subclass, and JSON true is no offset.
        if type(start) is not int or type(end) is not int:
            problems.append(f"{where}.start and .end must be integers")
            continue
        if not 0 <= start <= end <= length:
            problems.append(f"{where} span {start}..{end} is outside 0..{length}")
            continue
        if raw != (utf16_slice(source, start, end) if astral else source[start:end]):
            problems.append(f"{where}.raw does not equal source.slice({start}, {end})")
        if start < previous_end:
            problems.append(f"{where} overlaps or precedes the node before it")
        previous_end = max(previous_end, end)
        field = _VALUE_FIELD.get(kind)
        if field is not None:
            value = node.get(field)
            if not isinstance(value, str) or not value:
                problems.append(f"{where}.{field} must be a non-empty string")
            elif kind == "slash_command" and strict_names and not STRICT_NAME.fullmatch(value):
                problems.append(f"{where}.name {value!r} does not match {STRICT_NAME.pattern}")
    return problems


def check_composer_input(payload: Any, *, strict_names: bool = True) -> ComposerInputPayload:
    """Validate and parse, raising ComposerInputError with every problem found."""
    problems = composer_input_problems(payload, strict_names=strict_names)
    if problems:
        raise ComposerInputError(problems)
    return ComposerInputPayload.model_validate(payload)


def strict_payload(payload: ComposerInputPayload) -> ComposerInputPayload:
    """Send as text every slash_command whose name a strict runtime would refuse."""
    if not payload.nodes or all(
        n.kind != "slash_command" or STRICT_NAME.fullmatch(n.name) for n in payload.nodes
    ):
        return payload
    merged: list[Any] = []
    for node in payload.nodes:
        if isinstance(node, SlashCommandNode) and not STRICT_NAME.fullmatch(node.name):
            node = TextNode(start=node.start, end=node.end, raw=node.raw)
        if merged and node.kind == "text" and merged[-1].kind == "text":
            last = merged.pop()
            node = TextNode(start=last.start, end=node.end, raw=last.raw + node.raw)
        merged.append(node)
    return ComposerInputPayload(source=payload.source, nodes=tuple(merged))
