"""JSON of big values in slices, for a worker thread (issue 10: no message blocks the loop 50 ms).

A 1 MiB message's answer is some 6 MB of JSON: ``json.dumps`` or ``json.loads`` of it is one
C call of 100-250 ms, and a C call holds the interpreter until it returns, in a thread too.
Here the same text is made (or read) in many calls of about 1 ms each; between calls the
interpreter goes back to the loop (every switch interval, 5 ms). Same output as ``json``.
"""

from __future__ import annotations

import functools
import json
import json.decoder
from collections.abc import Callable, Iterable, Iterator
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any

SLICE = 1000  # list items per encoding call: 1,000 nodes, about 1 ms
CHARS = 64 * 1024  # characters of a long string per encoding call: about 1 ms

Separators = tuple[str, str]
DEFAULT: Separators = (", ", ": ")  # json.dumps' own


Chunks = Callable[[Any, int], Iterable[str]]  # ``chunks(value, 0)``: a JSON text in pieces


@functools.cache
def chunker(ensure_ascii: bool = True, separators: Separators = DEFAULT) -> Chunks:
    """``json.dumps(value, ensure_ascii=..., separators=...)`` in pieces, ``"".join`` of them
    the text, without its check for cycles (none in the values built here), made once:
    ``JSONEncoder.encode`` makes its C encoder again on every call, a good part of a small
    answer's cost. A hot caller joins the pieces itself (no call of this module's per value).
    """
    python = json.JSONEncoder(
        ensure_ascii=ensure_ascii, check_circular=False, separators=separators
    )
    if c_make_encoder is None:  # not CPython: json's own
        return lambda value, _level: python.iterencode(value)
    strings = encode_basestring_ascii if ensure_ascii else encode_basestring
    item, key = separators
    make: Chunks = c_make_encoder(
        None, python.default, strings, None, key, item, False, False, True
    )
    return make


@functools.cache
def encoder(ensure_ascii: bool = True, separators: Separators = DEFAULT) -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=..., separators=...)``, from ``chunker``."""
    make = chunker(ensure_ascii, separators)
    return lambda value: "".join(make(value, 0))


def dump_bytes(value: Any, ensure_ascii: bool = True, separators: Separators = DEFAULT) -> bytes:
    """``json.dumps(value, ensure_ascii=..., separators=...).encode()``, encoded in pieces:
    objects key by key, long lists ``SLICE`` items a call, long strings ``CHARS`` characters
    a call; and made UTF-8 a group of pieces at a time: no call joins or encodes the whole
    text. (With one emoji in it, a 6 MB answer is a string of 24 MB, four bytes a character:
    its join and its encoding took 15-25 ms each, in one call.)
    """
    pieces = _pieces(value, encoder(ensure_ascii, separators), separators)
    return b"".join(_utf8(pieces))


def _utf8(pieces: Iterator[str]) -> Iterator[bytes]:
    group: list[str] = []
    size = 0
    for piece in pieces:
        group.append(piece)
        size += len(piece)
        if size >= CHARS:
            yield "".join(group).encode()
            group, size = [], 0
    yield "".join(group).encode()


def _pieces(value: Any, encode: Callable[[Any], str], separators: Separators) -> Iterator[str]:
    comma, colon = separators
    if isinstance(value, dict) and value:
        separator = "{"
        for key, item in value.items():
            yield f"{separator}{encode(key)}{colon}"
            yield from _pieces(item, encode, separators)
            separator = comma
        yield "}"
    elif isinstance(value, list) and len(value) > SLICE:
        yield "["
        for start in range(0, len(value), SLICE):
            yield (comma if start else "") + encode(value[start : start + SLICE])[1:-1]
        yield "]"
    elif isinstance(value, str) and len(value) > CHARS:
        # Each character is escaped alone (a code point is never split), so the parts'
        # escapes are the whole string's.
        yield '"'
        for start in range(0, len(value), CHARS):
            yield encode(value[start : start + CHARS])[1:-1]
        yield '"'
    else:
        yield encode(value)


_reader: Any = json.decoder  # its Python reader (JSONObject, JSONArray): not in its stubs
_scan_once: Any = _reader.scanner.make_scanner(json.JSONDecoder())  # json.loads' C scanner


def loads(text: str) -> Any:
    """``json.loads(text)``, read in pieces: objects key by key (json's own Python reader),
    every list item a C call of its own. A list of a few huge items would still be read in
    long calls: the values stored here (answers) have small items in their long lists.
    """
    memo: dict[str, str] = {}

    def scan(s: str, idx: int) -> tuple[Any, int]:
        char = s[idx : idx + 1]
        if char == "{":
            return _reader.JSONObject((s, idx + 1), True, scan, None, None, memo)
        if char == "[":
            return _reader.JSONArray((s, idx + 1), _scan_once)
        return _scan_once(s, idx)

    whitespace = _reader.WHITESPACE.match
    try:
        value, end = scan(text, whitespace(text, 0).end())
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", text, exc.value) from None
    end = whitespace(text, end).end()
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value
