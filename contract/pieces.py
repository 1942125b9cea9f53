"""Nodes from pieces: the flat list ``_REFERENCE.split`` gives, commands added in its shape.

``pieces`` is text, then (raw, kind, name or path, text) for each node that is not text: a
text piece may be empty (no node), the others never are. Offsets are UTF-16 code units.
``astral``: the text has characters outside the BMP (UTF-16 offsets differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from .utf16 import utf16_ends, utf16_len

# One node before it is a model: (kind, start, end, raw, name or path; None for text).
Row = tuple[str, int, int, str, str | None]
# The same nodes as five lists: kinds, starts, ends, raws, values.
Columns = tuple[Sequence[str], Sequence[int], Sequence[int], Sequence[str], Sequence[str | None]]

# Up to this many pieces (7 nodes), a Python loop over them is cheaper than the fixed cost
# of the C loops; past it the C loops win by far (a 1 MiB message has 100,000 pieces).
_FEW = 29
# The key of a node's value (``name`` or ``path``), by kind.
VALUE_KEY = {"slash_command": "name", "file": "path", "symbol": "name", "branch": "name"}


def rows(pieces: Sequence[str], astral: bool) -> list[Row]:
    """The nodes as rows, by a Python loop (few pieces)."""
    size = utf16_len if astral else len
    found: list[Row] = []
    end = 0
    text = pieces[0]
    after = iter(pieces)
    next(after)
    # Four pieces a node: raw, kind, value, then the text that follows it. A tuple is
    # evaluated left to right: its start is the previous end, then ``end`` moves on.
    for raw, kind, value, following in zip(after, after, after, after, strict=True):
        if text:
            found.append(("text", end, end := end + size(text), text, None))
        found.append((kind, end, end := end + size(raw), raw, value))
        text = following
    if text:
        found.append(("text", end, end + size(text), text, None))
    return found


def columns(pieces: list[str], astral: bool) -> Columns:
    """The nodes as columns, made by slicing the pieces: no Python step per node."""
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
    return kinds, starts, ends, raws, values
