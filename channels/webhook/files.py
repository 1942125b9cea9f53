"""Files on ``POST /v1/messages``: multipart/form-data uploads, and JSON ``attachments``
given inline (base64) or as a URL the gateway fetches.

A URL is fetched only over https from a public address (gateway/addresses.py; each
redirect checked again, the address checked where the connection is made, so a name that
resolves to a private address is refused too), within ``attachment_fetch_timeout`` and the
size limits. ``attachment_allow_private_urls`` (tests only) also allows plain http and
private addresses. Whatever fails, the client is told only that the file could not be
downloaded: no difference between an address refused, a name not known, a port closed or a
page missing, which would map the gateway's network for whoever asks. The log says why.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.resolver import DefaultResolver
from pydantic import ValidationError
from yarl import URL

from gateway.addresses import public
from gateway.api import Attachment
from gateway.attachments import (
    AttachmentError,
    Budget,
    TooLarge,
    Unavailable,
    file_name,
    media_type,
    read_capped,
)
from gateway.body import valid_text

from .settings import WebhookSettings
from .wire import AttachmentIn, MessageIn, describe_validation_error

MAX_FILES = 20  # per message
MAX_REDIRECTS = 5
CHUNK = 64 * 1024
_FIELDS = ("conversation", "user", "text", "id")
log = logging.getLogger("slashgate.webhook")


class RequestProblem(Exception):
    """A malformed request (400), worded for the client."""


class PublicOnly(AbstractResolver):
    """Resolves as usual, but never to a loopback, private, link-local or reserved address:
    checked where the connection is made, so DNS cannot point a public name inside.
    """

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        allowed = [r for r in found if public(r["host"])]
        if not allowed:
            raise OSError(f"{host} is not a public address")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def refusal(exc: AttachmentError) -> tuple[int, str]:
    """(HTTP status, error code) for a file the gateway will not take."""
    if isinstance(exc, TooLarge):
        return 413, "attachment_too_large"
    return 422, "attachment_unavailable"


class WebhookFiles:
    def __init__(self, settings: WebhookSettings) -> None:
        self.settings = settings

    # -- multipart/form-data ----------------------------------------------------------------

    async def read_multipart(
        self, request: web.Request
    ) -> tuple[MessageIn, tuple[Attachment, ...], str]:
        """(message, its files, a fingerprint of the whole form for Idempotency-Key)."""
        budget = Budget.of(self.settings)
        fields: dict[str, str] = {}
        files: list[Attachment] = []
        digest = hashlib.sha256()
        field_room = self.settings.webhook_max_body
        try:
            reader = await request.multipart()
        except (ValueError, AssertionError) as exc:
            raise RequestProblem(f"malformed multipart body: {exc}") from None
        while True:
            try:
                part = await reader.next()
            except ValueError as exc:
                raise RequestProblem(f"malformed multipart body: {exc}") from None
            except HttpProcessingError as exc:  # a part's header aiohttp cannot parse
                raise RequestProblem(f"malformed multipart body: {exc.message}") from None
            if part is None:
                break
            if not isinstance(part, aiohttp.BodyPartReader):
                raise RequestProblem("nested multipart bodies are not supported")
            if part.filename is not None:
                if len(files) == MAX_FILES:
                    raise RequestProblem(f"at most {MAX_FILES} files per message")
                name = file_name(part.filename, f"file-{len(files) + 1}")
                declared = part.headers.get(aiohttp.hdrs.CONTENT_TYPE)
                # Header bytes outside UTF-8 arrive as lone surrogates: no store can keep them.
                if not valid_text(name) or not valid_text(declared or ""):
                    raise RequestProblem(
                        f"file {len(files) + 1}: its name and Content-Type must be UTF-8 text"
                    )
                data = await read_capped(_chunks(part), name, budget)
                kind = media_type(declared, name)
                files.append(Attachment(name, kind, data))
                digest.update(b"F%d:%s:%s:" % (len(data), name.encode(), kind.encode()) + data)
                continue
            raw = bytearray()
            async for chunk in _chunks(part):
                raw += chunk
                if len(raw) > field_room:
                    raise RequestProblem(
                        f"form fields over the limit of {self.settings.webhook_max_body} bytes"
                    )
            field_room -= len(raw)
            if part.name in _FIELDS:
                try:
                    fields[part.name] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise RequestProblem(f"{part.name}: not UTF-8") from None
                digest.update(b"T%d:%s:" % (len(raw), part.name.encode()) + raw)
        try:
            message = MessageIn.model_validate(fields, context={"files": len(files)})
        except ValidationError as exc:
            raise RequestProblem(describe_validation_error(exc)) from None
        return message, tuple(files), digest.hexdigest()

    # -- JSON attachments -------------------------------------------------------------------

    async def resolve(self, items: list[AttachmentIn]) -> tuple[Attachment, ...]:
        """The files of a JSON body: base64 decoded, URLs fetched; the limits checked."""
        if len(items) > MAX_FILES:
            raise RequestProblem(f"at most {MAX_FILES} files per message")
        budget = Budget.of(self.settings)
        found: list[Attachment] = []
        for index, item in enumerate(items):
            name = file_name(item.name, f"file-{index + 1}")
            if item.data is not None:
                try:
                    data = base64.b64decode(item.data, validate=True)
                except (binascii.Error, ValueError):
                    raise RequestProblem(f"attachments.{index}.data: not base64") from None
                budget.take(name, len(data))
                found.append(Attachment(name, media_type(item.media_type, name), data))
            else:
                assert item.url is not None  # the model wants one of data or url
                found.append(await self._fetch(item.url, name, item.media_type, budget))
        return tuple(found)

    async def _fetch(self, url: str, name: str, declared: str | None, budget: Budget) -> Attachment:
        private_ok = self.settings.attachment_allow_private_urls
        connector = aiohttp.TCPConnector(resolver=None if private_ok else PublicOnly())
        timeout = aiohttp.ClientTimeout(total=self.settings.attachment_fetch_timeout)
        target = self._checked(url, name)
        try:
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
                for _ in range(MAX_REDIRECTS + 1):
                    async with session.get(target, allow_redirects=False) as response:
                        location = response.headers.get(aiohttp.hdrs.LOCATION)
                        if response.status in (301, 302, 303, 307, 308) and location:
                            target = self._checked(str(target.join(URL(location))), name)
                            continue
                        if response.status != 200:
                            raise _not_downloaded(name, target, f"HTTP {response.status}")
                        budget.admit(name, response.content_length)
                        data = await read_capped(response.content.iter_chunked(CHUNK), name, budget)
                        kind = declared or response.headers.get(aiohttp.hdrs.CONTENT_TYPE)
                        return Attachment(name, media_type(kind, name), data, url=url)
        except TimeoutError:
            timeout_s = self.settings.attachment_fetch_timeout
            raise _not_downloaded(name, target, f"not within {timeout_s:g} s") from None
        except aiohttp.ClientError as exc:
            raise _not_downloaded(name, target, _reason(exc)) from None
        raise _not_downloaded(name, target, "too many redirects")

    def _checked(self, url: str, name: str) -> URL:
        """The URL, when the gateway may fetch it."""
        try:
            target = URL(url)
        except ValueError:
            raise Unavailable(f"{name}: not a URL. Nothing was sent to the agent.") from None
        private_ok = self.settings.attachment_allow_private_urls
        schemes = ("https", "http") if private_ok else ("https",)
        if target.scheme not in schemes or not target.host:
            raise Unavailable(
                f"{name}: only https URLs are fetched. Nothing was sent to the agent."
            )
        if not private_ok and not _public_literal(target.host):
            raise _not_downloaded(name, target, "not a public address")
        return target


def _not_downloaded(name: str, url: URL, why: str) -> Unavailable:
    """The same text to the client whatever failed; why, and the host, in the log."""
    log.info("attachment not downloaded from %s: %s", url.host, why)
    return Unavailable(f"{name} could not be downloaded. Nothing was sent to the agent.")


def _public_literal(host: str) -> bool:
    """False for an IP address that is not public; names are checked when resolved."""
    try:  # as aiohttp tells an address from a name (which it resolves: ``PublicOnly``)
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return True
    return public(literal)


def _reason(exc: aiohttp.ClientError) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return str(exc.os_error) or "cannot connect"
    return type(exc).__name__


async def _chunks(part: aiohttp.BodyPartReader) -> AsyncIterator[bytes]:
    while chunk := await part.read_chunk(CHUNK):
        yield chunk
