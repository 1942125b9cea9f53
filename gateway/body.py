"""Reading a request body whole, within a size limit, with its Content-Encoding undone.

The server turns aiohttp's own decompression off (``gateway.server``): it answers an
encoding it cannot decode with a plain-text 400 or 500 before any route sees the request.
Here ``gzip`` and ``deflate`` are decoded with the decoded size capped at the same limit (a
few kilobytes of gzip must not grow into gigabytes), ``identity`` passes, anything else is a
415. Chunked bodies are counted as they arrive: past the limit is a 413, whatever the
headers said.
"""

from __future__ import annotations

import asyncio
import zlib

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

ENCODINGS = ("identity", "gzip", "deflate")
_GZIP = 16 + zlib.MAX_WBITS
_ZLIB = zlib.MAX_WBITS
_RAW_DEFLATE = -zlib.MAX_WBITS  # "deflate" as some clients send it: no zlib header


class BodyError(Exception):
    """A body that cannot be taken: the status, a short code and a sentence for the client."""

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
