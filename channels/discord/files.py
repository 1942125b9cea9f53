"""Files of an interaction (attachment options): downloaded from Discord's CDN within the
limits of docs/attachments.md, checked on Discord's announced sizes first.

Attachment URLs are signed by Discord and need no token: none is sent. Only Discord's CDN
hosts over https are fetched, or the host of ``discord_api_base`` (a Discord-compatible test
server); redirects are not followed.
"""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
from yarl import URL

from gateway.attachments import Budget, file_name, media_type, not_downloaded, read_capped
from gateway.inbound import Attachment

from .settings import DiscordSettings

CHUNK = 64 * 1024
CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
SOURCE = "Discord"


@dataclass(frozen=True, slots=True)
class DiscordFile:
    """An attachment of an interaction, before it is downloaded."""

    name: str
    media_type: str
    size: int | None
    url: str


def discord_file(item: dict[str, object], index: int) -> DiscordFile | None:
    """One entry of ``data.resolved.attachments`` (a raw payload), or None without a URL."""
    url = item.get("url")
    if not isinstance(url, str):
        return None
    name = file_name(str(item.get("filename") or ""), f"file-{index}")
    size = item.get("size")
    declared = item.get("content_type")
    return DiscordFile(
        name,
        media_type(declared if isinstance(declared, str) else None, name),
        size if isinstance(size, int) else None,
        url,
    )


class DiscordFiles:
    def __init__(self, settings: DiscordSettings) -> None:
        self.settings = settings
        api = URL(settings.discord_api_base)
        self._api_origin = (api.scheme, api.host, api.port)

    def allowed(self, url: URL) -> bool:
        if (url.scheme, url.host, url.port) == self._api_origin:
            return True
        return url.scheme == "https" and (url.host or "").lower() in CDN_HOSTS

    async def fetch(
        self, session: aiohttp.ClientSession, files: tuple[DiscordFile, ...]
    ) -> tuple[Attachment, ...]:
        announced = Budget.of(self.settings)
        for item in files:
            announced.take(item.name, item.size or 0)
        budget = Budget.of(self.settings)
        return tuple([await self._download(session, item, budget) for item in files])

    async def _download(
        self, session: aiohttp.ClientSession, item: DiscordFile, budget: Budget
    ) -> Attachment:
        url = URL(item.url)
        if not self.allowed(url):
            raise not_downloaded(item.name, SOURCE, f"{url.host} is not a Discord file host")
        timeout = aiohttp.ClientTimeout(total=self.settings.attachment_fetch_timeout)
        try:
            async with session.get(url, timeout=timeout, allow_redirects=False) as response:
                if response.status != 200:
                    raise not_downloaded(item.name, SOURCE, f"HTTP {response.status}")
                budget.admit(item.name, response.content_length)
                data = await read_capped(response.content.iter_chunked(CHUNK), item.name, budget)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise not_downloaded(item.name, SOURCE, type(exc).__name__) from None
        return Attachment(item.name, item.media_type, data, item.url)
