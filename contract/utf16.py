"""UTF-16 code-unit arithmetic: spans are counted the way JavaScript and Telegram count."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate, count, repeat
from operator import rshift, sub

# CPython encodes "utf-16" (native order, with a byte order mark) without a codec lookup,
# several times faster than "utf-16-le" on short text; only lengths are taken from it.
_UTF16 = "utf-16"


def has_astral(text: str) -> bool:
    """True when some character needs a surrogate pair (so code points != UTF-16 units)."""
    # Encoding is a copy in C for text without astral characters, one pass for the rest:
    # far faster on long text than looking at every character from Python (max()).
    return not text.isascii() and utf16_len(text) != len(text)


def utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode(_UTF16, "surrogatepass")) // 2 - 1


def utf16_ends(pieces: Iterable[str]) -> list[int]:
    """The UTF-16 offset where each of the consecutive ``pieces`` ends: C loops only."""
    sizes = map(len, map(str.encode, pieces, repeat(_UTF16), repeat("surrogatepass")))
    # Each piece is a byte order mark (2 bytes) and then 2 bytes per code unit.
    return list(map(sub, map(rshift, accumulate(sizes), repeat(1)), count(1)))


def utf16_prefix(text: str, units: int) -> int:
    """How many code points of ``text`` fit in ``units`` UTF-16 code units (never half a pair)."""
    if utf16_len(text[:units]) <= units:
        return min(units, len(text))
    used = 0
    for index, char in enumerate(text):
        used += 2 if char > "\uffff" else 1
        if used > units:
            return index
    return len(text)


def utf16_slice(text: str, start: int, end: int) -> str:
    """``text.slice(start, end)`` as JavaScript computes it."""
    data = text.encode("utf-16-le", "surrogatepass")
    return data[2 * start : 2 * end].decode("utf-16-le", "surrogatepass")
