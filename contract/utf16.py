"""UTF-16 code-unit arithmetic: spans are counted the way JavaScript and Telegram count."""

from __future__ import annotations

import re

ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # characters that take two UTF-16 units


def has_astral(text: str) -> bool:
    """True when some character needs a surrogate pair (so code points != UTF-16 units)."""
    return not text.isascii() and max(text) > "\uffff"


def utf16_len(text: str) -> int:
    if not has_astral(text):
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


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
