"""UTF-16 code-unit arithmetic: spans are counted the way JavaScript and Telegram count."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from itertools import accumulate, repeat
from operator import rshift, sub

# CPython encodes "utf-16" (native order, with a byte order mark) without a codec lookup,
# several times faster than "utf-16-le" on short text; only lengths are taken from it.
_UTF16 = "utf-16"
_HEADER = sys.getsizeof("\U00010000") - 8  # a string's size less its characters (and NUL)


def has_astral(text: str) -> bool:
    """True when some character needs a surrogate pair (so code points != UTF-16 units)."""
    if text.isascii():
        return False
    # CPython stores a string in 1, 2 or 4 bytes a character, 4 exactly when one is outside
    # the BMP (PEP 393): its size answers at once for a text of any length. Any other size
    # (another layout) is answered by encoding.
    size, slots = sys.getsizeof(text) - _HEADER, len(text) + 1
    if size == 4 * slots:
        return True
    return size not in (slots, 2 * slots) and utf16_len(text) != len(text)


def utf16_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode(_UTF16, "surrogatepass")) // 2 - 1


def utf16_ends(pieces: Sequence[str]) -> list[int]:
    """The UTF-16 offset where each of the consecutive ``pieces`` ends: C loops only."""
    # Nodes alternate (text, reference, text, ...): when one of the two halves is ASCII, as
    # references and commands usually are, its pieces need no encoding.
    lengths = [0] * len(pieces)
    lengths[0::2] = _utf16_lengths(pieces[0::2])
    lengths[1::2] = _utf16_lengths(pieces[1::2])
    return list(accumulate(lengths))


def _utf16_lengths(pieces: Sequence[str]) -> Iterator[int]:
    if all(map(str.isascii, pieces)):
        return map(len, pieces)
    # Each encoding is a byte order mark (2 bytes), then 2 bytes per code unit.
    sizes = map(len, map(str.encode, pieces, repeat(_UTF16), repeat("surrogatepass")))
    return map(sub, map(rshift, sizes, repeat(1)), repeat(1))


def utf16_prefix(text: str, units: int) -> int:
    """How many code points of ``text`` fit in ``units`` UTF-16 code units (never half a pair);
    none fit in no units or fewer.
    """
    if units <= 0:
        return 0
    if text.isascii() or utf16_len(text[:units]) <= units:
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
