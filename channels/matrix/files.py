"""Files people send (``m.image``, ``m.file``, ``m.audio``, ``m.video``) for the runtime:
downloaded through the authenticated media API (``/_matrix/client/v1/media/download``,
with the bot's token) within the attachment limits: the size the message announces is
checked before the download, and the download is read no further than the limits allow. A
file of an encrypted room (``file``: its key, iv and hash in the encrypted message) is
decrypted once downloaded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import aiohttp
from mautrix.crypto.attachments import decrypt_attachment
from mautrix.errors import DecryptionError

from gateway.api import Attachment
from gateway.attachments import Budget, file_name, media_type, not_downloaded, read_capped
from gateway.offload import off_loop
from gateway.settings import CoreSettings

from .events import FILE_TYPES

SOURCE = "the Matrix homeserver"
READ = 64 * 1024
# mxc://<server name>/<media id> of the characters the spec allows: a host name (dot-separated
# labels), an IPv4 or a bracketed IPv6 address, with a port or not; a media id of
# [A-Za-z0-9_-]. Nothing a URL reads as a path (no "..", no "/") reaches the download's URL.
MXC = re.compile(
    r"mxc://((?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?)"
    r"/([A-Za-z0-9_-]+)"
)


@dataclass(frozen=True, slots=True)
class MediaRef:
    """A file of a message, before it is downloaded (``size`` as the message announced)."""

    mxc: str
    name: str
    media_type: str
    size: int | None
    sealed: dict[str, Any] | None = None  # an encrypted room's file: how to decrypt it


def media_refs(content: dict[str, Any]) -> list[MediaRef]:
    if content.get("msgtype") not in FILE_TYPES:
        return []
    sealed = content.get("file")
    if not isinstance(sealed, dict):
        sealed = None
    url = content.get("url") if sealed is None else sealed.get("url")
    if not isinstance(url, str):
        return []
    described = content.get("info")
    info: dict[str, Any] = described if isinstance(described, dict) else {}
    declared = content.get("filename") or content.get("body")
    name = file_name(declared if isinstance(declared, str) else None, "file")
    size = info.get("size")
    return [
        MediaRef(
            url,
            name,
            media_type(info.get("mimetype"), name),
            size if isinstance(size, int) and size >= 0 else None,
            sealed,
        )
    ]


def opened(ref: MediaRef, data: bytes) -> bytes:
    """An encrypted room's file decrypted (its hash checked first)."""
    sealed = ref.sealed
    if sealed is None:
        return data
    try:
        return decrypt_attachment(
            data, sealed["key"]["k"], sealed["hashes"]["sha256"], sealed["iv"]
        )
    except (DecryptionError, KeyError, TypeError, ValueError):  # ValueError: not base64
        raise not_downloaded(ref.name, SOURCE, "it could not be decrypted") from None


class MatrixFiles:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        homeserver: str,
        token: Callable[[], str],
        settings: CoreSettings,
    ) -> None:
        self.session = session
        self.homeserver = homeserver.rstrip("/")
        self.token = token  # read per download: a password bot signs in again (a new token)
        self.settings = settings

    @staticmethod
    def refs(content: dict[str, Any]) -> list[MediaRef]:
        return media_refs(content)

    async def fetch(self, refs: list[MediaRef]) -> tuple[Attachment, ...]:
        budget = Budget.of(self.settings)
        for ref in refs:  # every announced size first: nothing is downloaded in vain
            budget.admit(ref.name, ref.size)
        found = []
        for ref in refs:
            data = await self._download(ref, budget)
            found.append(Attachment(ref.name, ref.media_type, data))
        return tuple(found)

    async def _download(self, ref: MediaRef, budget: Budget) -> bytes:
        if not ref.mxc.startswith("mxc://"):  # an http:// one would be fetched from anywhere
            raise not_downloaded(ref.name, SOURCE, "its address is not an mxc:// URL")
        address = MXC.fullmatch(ref.mxc)
        if address is None:  # "mxc://../config" would be the homeserver's own endpoint
            raise not_downloaded(ref.name, SOURCE, "its address is not a valid mxc:// URL")
        server, media = address.groups()
        url = (
            f"{self.homeserver}/_matrix/client/v1/media/download/"
            f"{quote(server, safe='')}/{quote(media, safe='')}"
        )
        headers = {"Authorization": f"Bearer {self.token()}"}
        timeout = aiohttp.ClientTimeout(total=self.settings.attachment_fetch_timeout)
        try:
            async with self.session.get(url, headers=headers, timeout=timeout) as response:
                if response.status != 200:
                    raise not_downloaded(ref.name, SOURCE, f"HTTP {response.status}")
                data = await read_capped(response.content.iter_chunked(READ), ref.name, budget)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise not_downloaded(ref.name, SOURCE, type(exc).__name__) from None
        return await off_loop(len(data), opened, ref, data)
