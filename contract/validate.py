"""Structural validation of composer_input, with the rules the Electric Agents server applies."""

from __future__ import annotations

import re
from itertools import accumulate, compress, repeat
from operator import eq, itemgetter, ne
from typing import Any

from .models import ComposerInputPayload, Nodes, Row, as_nodes, command_names
from .utf16 import has_astral, utf16_ends

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
    if _plainly_valid(source, nodes, strict_names):
        return []
    # Without astral characters UTF-16 offsets are code point offsets: slice directly. With
    # them, the source is encoded once and each node's raw compared with its slice of that.
    units = source.encode("utf-16-le", "surrogatepass") if has_astral(source) else None
    length = len(source) if units is None else len(units) // 2
    problems: list[str] = []
    previous_end = 0
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            problems.append(f"nodes[{i}] must be an object")
            continue
        kind = node.get("kind")
        if kind != "text" and kind not in _VALUE_FIELD:
            problems.append(f"nodes[{i}].kind {kind!r} is not a known node kind")
            continue
        start, end, raw = node.get("start"), node.get("end"), node.get("raw")
        # bool is an int subclass, and JSON true is no offset.
        if type(start) is not int or type(end) is not int:
            problems.append(f"nodes[{i}].start and .end must be integers")
            continue
        if not 0 <= start <= end <= length:
            problems.append(f"nodes[{i}] span {start}..{end} is outside 0..{length}")
            continue
        if raw != (
            source[start:end]
            if units is None
            else units[2 * start : 2 * end].decode("utf-16-le", "surrogatepass")
        ):
            problems.append(f"nodes[{i}].raw does not equal source.slice({start}, {end})")
        if start < previous_end:
            problems.append(f"nodes[{i}] overlaps or precedes the node before it")
        if end > previous_end:
            previous_end = end
        field = _VALUE_FIELD.get(kind)
        if field is not None:
            value = node.get(field)
            if not isinstance(value, str) or not value:
                problems.append(f"nodes[{i}].{field} must be a non-empty string")
            elif kind == "slash_command" and strict_names and not STRICT_NAME.fullmatch(value):
                problems.append(f"nodes[{i}].name {value!r} does not match {STRICT_NAME.pattern}")
    return problems


def check_composer_input(payload: Any, *, strict_names: bool = True) -> ComposerInputPayload:
    """Validate and parse, raising ComposerInputError with every problem found."""
    problems = composer_input_problems(payload, strict_names=strict_names)
    if problems:
        raise ComposerInputError(problems)
    return ComposerInputPayload.model_validate(payload)


def strict_payload(payload: ComposerInputPayload) -> ComposerInputPayload:
    """Send as text every slash_command whose name a strict runtime would refuse."""
    nodes = payload.nodes
    if nodes is None:
        return payload
    for name in command_names(nodes):
        if not STRICT_NAME.fullmatch(name or ""):
            break
    else:  # every name is strict (the usual case; no nodes too): the payload as it is
        return payload
    rows = as_nodes(nodes).rows
    merged: list[Row] = []
    run: list[str] = []  # raws of the text run being merged, joined once (linear)
    for row in rows:
        kind, start, end, raw, value = row
        if kind == "slash_command" and not STRICT_NAME.fullmatch(value or ""):
            kind, value = "text", None
        if kind == "text" and merged and merged[-1][0] == "text":
            run.append(raw)
            merged[-1] = ("text", merged[-1][1], end, "", None)
            continue
        _close_run(merged, run)
        run = [raw] if kind == "text" else []
        merged.append((kind, start, end, raw, value))
    _close_run(merged, run)
    return ComposerInputPayload(source=payload.source, nodes=Nodes(merged))


def _close_run(merged: list[Row], run: list[str]) -> None:
    """Give the last merged text node the raws of its run."""
    if len(run) > 1:
        kind, start, end, _, value = merged[-1]
        merged[-1] = (kind, start, end, "".join(run), value)


_FIELDS = tuple(map(itemgetter, ("kind", "start", "end", "raw")))
_KINDS = frozenset(("text", *_VALUE_FIELD))


def _plainly_valid(source: str, nodes: list[Any], strict_names: bool) -> bool:
    """True for nodes that cover the source exactly, one after the other, and break no rule:
    what the contract makes. Checked column by column in C loops (a Python step per node
    is what made a 1 MiB message slow); False means "look node by node" and says nothing
    more.
    """
    if not nodes or set(map(type, nodes)) != {dict}:
        return False
    try:
        kinds, starts, ends, raws = (list(map(field, nodes)) for field in _FIELDS)
        joined = "".join(raws)  # TypeError unless every raw is a string
    except (KeyError, TypeError):
        return False
    if (
        not _KINDS.issuperset(kinds)
        or set(map(type, starts)) != {int}  # bool is an int subclass, and no offset
        or set(map(type, ends)) != {int}
        or starts[0] != 0
        or starts[1:] != ends[:-1]  # contiguous: no gap, no overlap
        or joined != source
    ):
        return False
    # The pieces make up the source; each is its slice when its length is its span.
    if (utf16_ends(raws) if has_astral(source) else list(accumulate(map(len, raws)))) != ends:
        return False
    marks = list(map(ne, kinds, repeat("text")))
    value_kinds = list(compress(kinds, marks))
    fields = map(_VALUE_FIELD.__getitem__, value_kinds)
    values: list[Any] = list(map(dict.get, compress(nodes, marks), fields))
    if set(map(type, values)) - {str} or not all(values):  # present, strings, not empty
        return False
    if strict_names:
        names = compress(values, map(eq, value_kinds, repeat("slash_command")))
        return all(map(STRICT_NAME.fullmatch, names))
    return True
