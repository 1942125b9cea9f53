"""Files of an interaction (attachment options) or a message: downloaded from Discord's CDN
by the gateway's downloader (gateway/downloads.py), within the limits.

Attachment URLs are signed by Discord and need no token: none is sent. Only Discord's CDN
hosts over https are fetched, or the host of ``discord_api_base`` (a Discord-compatible test
server); redirects are not followed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.attachments import file_name, media_type
from gateway.downloads import Downloader, FileHosts

from .settings import DiscordSettings

CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})


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


class DiscordFiles(Downloader):
    def __init__(self, settings: DiscordSettings) -> None:
        hosts = FileHosts(settings.discord_api_base, CDN_HOSTS)
        super().__init__(settings, "Discord", hosts, keep_url=True)  # signed: no token needed
