"""Nodes from pieces: the flat list ``_REFERENCE.split`` gives, commands added in its shape.

``pieces`` is text, then (raw, kind, name or path, text) for each node that is not text: a
text piece may be empty (no node), the others never are. Offsets are UTF-16 code units.
"""

from __future__ import annotations

from itertools import accumulate

from .models import Nodes, Row
from .utf16 import utf16_ends, utf16_len

# Up to this many pieces (7 nodes), a Python loop over them is cheaper than the fixed cost
# of the C loops; past it the C loops win by far (a 1 MiB message has 100,000 pieces).
_FEW = 29


def nodes_of(pieces: list[str], astral: bool) -> Nodes:
    """``astral``: the text has characters outside the BMP (UTF-16 offsets differ)."""
    return _few(pieces, astral) if len(pieces) <= _FEW else _many(pieces, astral)


def _few(pieces: list[str], astral: bool) -> Nodes:
    size = utf16_len if astral else len
    rows: list[Row] = []
    end = 0
    text = pieces[0]
    for index in range(1, len(pieces), 4):
        if text:
            start, end = end, end + size(text)
            rows.append(("text", start, end, text, None))
        raw = pieces[index]
        start, end = end, end + size(raw)
        rows.append((pieces[index + 1], start, end, raw, pieces[index + 2]))
        text = pieces[index + 3]
    if text:
        rows.append(("text", end, end + size(text), text, None))
    return Nodes(rows)


def _many(pieces: list[str], astral: bool) -> Nodes:
    """Columns made by slicing the pieces: no Python step per node."""
    texts = pieces[0::4]
    count = 2 * len(texts) - 1
    raws = pieces[:count]  # any list of that size, overwritten
    raws[0::2] = texts
    raws[1::2] = pieces[1::4]
    kinds = ["text"] * count
    kinds[1::2] = pieces[2::4]
    values: list[str | None] = [None] * count
    values[1::2] = pieces[3::4]
    # A node never ends just before text that could start one (it ends at white space or
    # punctuation), so only the first and the last text can be empty.
    if not raws[-1]:
        del raws[-1], kinds[-1], values[-1]
    if raws and not raws[0]:
        del raws[0], kinds[0], values[0]
    ends = utf16_ends(raws) if astral else list(accumulate(map(len, raws)))
    starts = [0, *ends]
    starts.pop()
    return Nodes.from_columns(kinds, starts, ends, raws, values)
