"""Attachments between channels and runtimes: size limits, capped reads, compositor parts.

Channels turn platform files into ``Attachment`` (bytes), checking the limits before they
download anything and again while they read; runtimes lower them by what they can take and
turn the rest into a descriptor (name, type, size), so that nothing is dropped silently.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .inbound import Attachment

if TYPE_CHECKING:
    from .settings import CoreSettings

OCTET_STREAM = "application/octet-stream"
FILES_NOT_SENT = "_(the attached files were not sent: gateway commands take no files)_"
_NAME_MAX = 200  # characters kept of a file name
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


class AttachmentError(Exception):
    """A file the gateway will not take; the text is for the user (it names the file)."""


class TooLarge(AttachmentError):
    """Over ``attachment_max_bytes`` or ``attachment_max_total``."""


class Unavailable(AttachmentError):
    """The file could not be read: refused source, HTTP error, timeout."""


def not_downloaded(name: str, source: str, why: str) -> Unavailable:
    """``chart.png could not be downloaded from Slack (HTTP 404). ...``"""
    return Unavailable(
        f"{name} could not be downloaded from {source} ({why}). Nothing was sent to the agent."
    )


def size_text(size: int) -> str:
    """``512 bytes``, ``2.5 kB``, ``20 MB`` (decimal units, as platforms show them)."""
    if size < 1000:
        return f"{size} bytes"
    value, unit = size / 1000, "kB"
    for bigger in ("MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"


@dataclass(slots=True)
class Budget:
    """The size limits of one message's files: each file, and all of them together."""

    per_file: int
    total: int
    used: int = field(default=0)

    @classmethod
    def of(cls, settings: CoreSettings) -> Budget:
        return cls(settings.attachment_max_bytes, settings.attachment_max_total)

    def admit(self, name: str, size: int | None, exact: bool = True) -> None:
        """Refuse a file over a limit: by its announced size, before it is downloaded, or
        (``exact`` False) by the part read so far, which is only a lower bound.
        """
        if size is None:
            return
        what = f"{name} is {size_text(size)}, over" if exact else f"{name} is over"
        if size > self.per_file:
            raise TooLarge(
                f"{what} the limit of {size_text(self.per_file)} per file. "
                "Nothing was sent to the agent."
            )
        if self.used + size > self.total:
            sum_ = size_text(self.used + size) if exact else f"more than {size_text(self.total)}"
            raise TooLarge(
                f"the files come to {sum_}, over the limit of {size_text(self.total)} per "
                "message. Nothing was sent to the agent."
            )

    def take(self, name: str, size: int) -> None:
        """Count a file read in full."""
        self.admit(name, size)
        self.used += size

    @property
    def room(self) -> int:
        """The most bytes the next file may have."""
        return min(self.per_file, self.total - self.used)


async def read_capped(chunks: AsyncIterable[bytes], name: str, budget: Budget) -> bytes:
    """Read a file, stopping as soon as it is over the budget (whatever size was announced)."""
    room = budget.room
    data = bytearray()
    async for chunk in chunks:
        data += chunk
        if len(data) > room:
            budget.admit(name, len(data), exact=False)  # over a limit: raises, naming it
    budget.take(name, len(data))
    return bytes(data)


def file_name(name: str | None, fallback: str) -> str:
    """A name fit for a prompt: no directories, no control characters, bounded length."""
    base = re.split(r"[\\/]", name or "")[-1]
    base = _UNSAFE.sub("", base).strip()
    return base[:_NAME_MAX] or fallback


def media_type(declared: str | None, name: str) -> str:
    """The declared type without parameters, else a guess from the name."""
    value = (declared or "").split(";", 1)[0].strip().lower()
    if value and "/" in value:
        return value
    return mimetypes.guess_type(name)[0] or OCTET_STREAM


def describe(item: Attachment) -> str:
    """The descriptor of a file whose bytes a runtime cannot take (compositor guide)."""
    size = f", {size_text(len(item.data))}" if item.data is not None else ""
    return f"[attached file: {item.name} ({item.media_type}{size}); its contents are not included]"


def descriptors(items: Iterable[Attachment]) -> str:
    return "\n".join(describe(item) for item in items)


def part(item: Attachment) -> dict[str, Any]:
    """The compositor part: ``file-attachment`` with its bytes (base64), or ``file-ref``."""
    if item.data is None:
        ref = {"kind": "url", "url": item.url}
        return {"type": "file-ref", "ref": ref, "name": item.name, "mime": item.media_type}
    body: dict[str, Any] = {
        "type": "file-attachment",
        "name": item.name,
        "mime": item.media_type,
        "size": len(item.data),
        "data": base64.b64encode(item.data).decode("ascii"),
    }
    if item.url is not None:
        body["url"] = item.url
    return body


def with_parts(payload: dict[str, Any], items: tuple[Attachment, ...]) -> dict[str, Any]:
    """A composer_input payload with the message's files as compositor parts, in
    ``attachments`` (a field the payload validation of Electric Agents leaves alone).
    """
    return {**payload, "attachments": [part(item) for item in items]} if items else payload
