"""A message's files downloaded from a platform within the limits of docs/attachments.md:
the sizes the platform announced are checked first (nothing is fetched when they are
over), then each file is read within what is left, stopping as soon as it is over.

Only the platform's own file hosts, over https, or the host of its API server (a test
server) are fetched; any other URL is refused without a request, and redirects are not
followed (a token sent with the request would go along).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import aiohttp
from yarl import URL

from .attachments import Budget, not_downloaded, read_capped
from .inbound import Attachment

if TYPE_CHECKING:
    from .settings import CoreSettings

CHUNK = 64 * 1024


class RemoteFile(Protocol):
    """A file as the platform announced it, before it is downloaded."""

    @property
    def name(self) -> str: ...
    @property
    def media_type(self) -> str: ...
    @property
    def size(self) -> int | None: ...
    @property
    def url(self) -> str | None: ...  # None: not given (see ``Downloader.locate``)


@dataclass(frozen=True, slots=True)
class FileHosts:
    """Where a platform's files may be fetched from."""

    api_base: str  # its API server, also allowed over http (a test server)
    hosts: frozenset[str] = frozenset()
    domain: str | None = None  # this domain and its subdomains

    def allowed(self, url: URL) -> bool:
        api = URL(self.api_base)
        if (url.scheme, url.host, url.port) == (api.scheme, api.host, api.port):
            return True
        host = (url.host or "").lower()
        listed = host in self.hosts or (
            self.domain is not None and (host == self.domain or host.endswith("." + self.domain))
        )
        return url.scheme == "https" and listed


def status_ok(response: aiohttp.ClientResponse) -> str | None:
    """Why a response is not the file (None: it is)."""
    return None if response.status == 200 else f"HTTP {response.status}"


class Downloader:
    def __init__(
        self,
        settings: CoreSettings,
        source: str,
        hosts: FileHosts,
        *,
        headers: Mapping[str, str] | None = None,
        check: Callable[[aiohttp.ClientResponse], str | None] = status_ok,
        keep_url: bool = False,
    ) -> None:
        """``source``: the platform as the user reads it (``Slack``); ``headers``: sent
        with each request; ``keep_url``: the URL is handed on with the file (a link that
        works without the platform's token).
        """
        self.settings = settings
        self.source = source
        self.hosts = hosts
        self._headers = dict(headers or {})
        self._check = check
        self._keep_url = keep_url

    def allowed(self, url: URL) -> bool:
        return self.hosts.allowed(url)

    async def fetch(
        self, session: aiohttp.ClientSession, files: Sequence[RemoteFile]
    ) -> tuple[Attachment, ...]:
        """Download the files, within the limits (checked on the announced sizes first)."""
        announced = Budget.of(self.settings)
        for item in files:
            announced.take(item.name, item.size or 0)
        budget = Budget.of(self.settings)
        return tuple([await self._download(session, item, budget) for item in files])

    async def locate(self, item: RemoteFile, budget: Budget) -> str:
        """Where ``item`` is downloaded from. A platform that names a file's URL only when
        asked (Telegram's getFile) says it here, and admits to ``budget`` any size it learns.
        """
        if item.url is None:  # Slack: hidden by the plan's limit, or only known to files.info
            raise not_downloaded(item.name, self.source, "no download link given")
        return item.url

    async def _download(
        self, session: aiohttp.ClientSession, item: RemoteFile, budget: Budget
    ) -> Attachment:
        located = await self.locate(item, budget)
        try:  # the platform's text: the port or an IPv6 host may not parse
            url = URL(located)
            allowed = self.allowed(url)
        except ValueError:
            raise not_downloaded(item.name, self.source, "malformed URL") from None
        if not allowed:
            refused = f"{url.host} is not a {self.source} file host"
            raise not_downloaded(item.name, self.source, refused)
        timeout = aiohttp.ClientTimeout(total=self.settings.attachment_fetch_timeout)
        try:
            async with session.get(
                url, headers=self._headers, timeout=timeout, allow_redirects=False
            ) as response:
                why = self._check(response)
                if why is not None:
                    raise not_downloaded(item.name, self.source, why)
                budget.admit(item.name, response.content_length)
                data = await read_capped(response.content.iter_chunked(CHUNK), item.name, budget)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise not_downloaded(item.name, self.source, type(exc).__name__) from None
        return Attachment(item.name, item.media_type, data, item.url if self._keep_url else None)
