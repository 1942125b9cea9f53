"""Reading a request body whole, within a size limit, with its Content-Encoding undone.

The server turns aiohttp's own decompression off (``slashgate.server``): it answers an
encoding it cannot decode with a plain-text 400 or 500 before any route sees the request.
Here ``gzip`` and ``deflate`` are decoded with the decoded size capped at the same limit (a
few kilobytes of gzip must not grow into gigabytes), ``identity`` passes, anything else is a
415. Chunked bodies are counted as they arrive: past the limit is a 413, whatever the
headers said.

Also the checks every channel makes of what a request carries: JSON that is strict (UTF-8,
no NaN, no lone surrogate in any string), and header values as the bytes that were sent.
aiohttp decodes header bytes with ``surrogateescape``, so a value with bytes outside UTF-8
holds lone surrogates, which no store, log or runtime can encode.
"""

from __future__ import annotations

import asyncio
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

ENCODINGS = ("identity", "gzip", "deflate")
_GZIP = 16 + zlib.MAX_WBITS
_ZLIB = zlib.MAX_WBITS
_RAW_DEFLATE = -zlib.MAX_WBITS  # "deflate" as some clients send it: no zlib header


class BodyError(Exception):
    """A request (its body or a header) that cannot be taken: the status, a short code and a
    sentence for the client.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _too_large(limit: int) -> BodyError:
    return BodyError(413, "too_large", f"request body over the limit of {limit} bytes")


def content_coding(request: web.Request) -> str:
    """The coding applied to the body (``identity`` when none), or BodyError 415."""
    header = request.headers.get("Content-Encoding")
    if not header:  # the usual case
        return "identity"
    codings = [c.strip().lower() for c in header.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return "identity"
    coding = "gzip" if codings == ["x-gzip"] else codings[0]
    if len(codings) > 1 or coding not in ENCODINGS:
        raise BodyError(
            415,
            "unsupported_encoding",
            f"Content-Encoding {header!r} is not supported; send {', '.join(ENCODINGS)}",
        )
    return coding


async def read_body(request: web.Request, limit: int) -> bytes:
    """The whole body, decoded: BodyError 413 past ``limit`` bytes (as sent or decoded), 415
    for an unknown encoding, 400 for a body that ends early or does not decode.
    """
    coding = content_coding(request)
    length = request.content_length
    if length is not None and length > limit:
        raise _too_large(limit)
    try:
        if length is not None:  # announced: aiohttp's parser delivers that much, no more
            raw = await request.content.readexactly(length)
        else:
            raw = await _chunked(request, limit)
    except (
        RequestPayloadError,
        HttpProcessingError,
        ConnectionError,
        asyncio.IncompleteReadError,
    ) as exc:
        raise BodyError(400, "incomplete_body", f"request body could not be read: {exc}") from None
    if coding == "identity":
        return raw
    return _decode(coding, raw, limit)


async def _chunked(request: web.Request, limit: int) -> bytes:
    """A body of no announced length, counted as it arrives."""
    raw = bytearray()
    # Not content.read(n): it returns what has arrived so far, not n bytes.
    async for chunk in request.content.iter_any():
        raw += chunk
        if len(raw) > limit:
            raise _too_large(limit)
    return bytes(raw)


def _decode(coding: str, data: bytes, limit: int) -> bytes:
    if coding == "gzip":
        wbits = _GZIP
    else:  # RFC 1950: a zlib stream starts with compression method 8
        wbits = _ZLIB if data[:1] and data[0] & 0x0F == 8 else _RAW_DEFLATE
    decoder = zlib.decompressobj(wbits)
    try:
        out = decoder.decompress(data, limit + 1)
    except zlib.error:
        out = None
    if out is not None and len(out) > limit:
        raise _too_large(limit)
    if out is None or not decoder.eof or decoder.unused_data:
        raise BodyError(400, "malformed_encoding", f"request body is not valid {coding} data")
    return out


# -- JSON ------------------------------------------------------------------------------------

# A JSON escape of a surrogate (paired or not): only then can a decoded string hold one.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(raw: bytes) -> Any:
    """The JSON value of a body, read strictly: BodyError 400 ``malformed_json`` for text that is
    not JSON (NaN and Infinity included), ``invalid_text`` naming the field for a string that
    is not valid Unicode: bytes outside UTF-8, or a lone surrogate (``"\\ud800"``), which
    Python's own parser lets through and strict parsers elsewhere refuse.
    """
    try:
        text, undecodable = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        # Each bad byte becomes a lone surrogate, found below in the string that holds it.
        text, undecodable = raw.decode("utf-8", "surrogateescape"), True
    try:
        data = json.loads(text, parse_constant=_constant)
    except RecursionError:
        raise BodyError(400, "malformed_json", "request body is nested too deeply") from None
    except ValueError as exc:
        if undecodable:  # the bad bytes are outside any string
            raise BodyError(
                400, "malformed_json", "request body is not valid JSON: not UTF-8"
            ) from None
        raise BodyError(400, "malformed_json", f"request body is not valid JSON: {exc}") from None
    if undecodable or _SURROGATE_ESCAPE.search(raw):
        where = lone_surrogate(data)
        if where is not None:
            raise BodyError(
                400,
                "invalid_text",
                f"{where or 'body'}: not valid Unicode text "
                "(a lone surrogate, or bytes that are not UTF-8)",
            )
    return data


def valid_text(text: str) -> bool:
    """No lone surrogate in ``text``: it can be encoded as UTF-8 (stored, logged, sent on)."""
    return _SURROGATE.search(text) is None


def lone_surrogate(value: Any) -> str | None:
    """Where in a JSON value a string (or a name) holds a lone surrogate: its dotted path
    (``attachments.0.name``, "" for the value itself), or None when there is none.
    """
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:  # not recursive: JSON nests as deep as the parser allowed
        item, where = stack.pop()
        if isinstance(item, str):
            if not valid_text(item):
                return where
        elif isinstance(item, dict):
            for name, child in item.items():
                path = f"{where}.{_printable(name)}" if where else _printable(name)
                if not valid_text(name):
                    return path
                stack.append((child, path))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                stack.append((child, f"{where}.{index}" if where else str(index)))
    return None


def _printable(name: str) -> str:
    """A field name fit for an error message and a log line (its bad characters escaped)."""
    return name.encode("utf-8", "backslashreplace").decode()


# -- headers ---------------------------------------------------------------------------------


def header_bytes(headers: Mapping[str, str], name: str) -> bytes:
    """A header's value as the client sent it (b"" when absent): compared with a secret as
    bytes, a value past ASCII is a mismatch rather than a ``UnicodeEncodeError``.
    """
    return headers.get(name, "").encode("utf-8", "surrogateescape")


def token_header(headers: Mapping[str, str], name: str) -> str | None:
    """A header that holds a key or an id: printable ASCII (RFC 9110's visible characters and
    spaces), None when absent, else BodyError 400 ``invalid_header`` naming it.
    """
    value = headers.get(name)
    if value is not None and not (value.isascii() and value.isprintable()):
        raise BodyError(400, "invalid_header", f"{name} must be printable ASCII")
    return value
