"""Slack files (``files`` on a message or a mention), downloaded with the bot token.

The token goes only to Slack: a file is fetched over https from ``slack.com`` or one of its
subdomains (``files.slack.com``), or from the host of ``slack_api_base`` (the API server the
token already goes to: a Slack-compatible test server). Any other URL is refused without a
request, and redirects are not followed (they would carry the token elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
from yarl import URL

from gateway.attachments import Budget, file_name, media_type, not_downloaded, read_capped
from gateway.inbound import Attachment

from .settings import SlackSettings

CHUNK = 64 * 1024
SLACK_DOMAIN = "slack.com"


@dataclass(frozen=True, slots=True)
class SlackFile:
    """A file of a Slack message, before it is downloaded (``size`` as Slack announced it)."""

    name: str
    media_type: str
    size: int | None
    url: str | None


def slack_files(event: dict[str, Any]) -> tuple[SlackFile, ...]:
    found = []
    for index, item in enumerate(event.get("files") or (), 1):
        if not isinstance(item, dict):
            continue
        name = file_name(item.get("name") or item.get("title"), f"file-{index}")
        url = item.get("url_private_download") or item.get("url_private")
        size = item.get("size")
        found.append(
            SlackFile(
                name,
                media_type(item.get("mimetype"), name),
                size if isinstance(size, int) else None,
                url if isinstance(url, str) else None,
            )
        )
    return tuple(found)


class SlackFiles:
    def __init__(self, settings: SlackSettings, token: str) -> None:
        self.settings = settings
        self._token = token
        api = URL(settings.slack_api_base)
        self._api_origin = (api.scheme, api.host, api.port)

    def allowed(self, url: URL) -> bool:
        """Whether the bot token may go to ``url``: Slack's own hosts, or the API server."""
        if (url.scheme, url.host, url.port) == self._api_origin:
            return True
        host = (url.host or "").lower()
        return url.scheme == "https" and (host == SLACK_DOMAIN or host.endswith("." + SLACK_DOMAIN))

    async def fetch(
        self, session: aiohttp.ClientSession, files: tuple[SlackFile, ...]
    ) -> tuple[Attachment, ...]:
        """Download the files, within the limits (checked on Slack's sizes first)."""
        announced = Budget.of(self.settings)
        for item in files:
            announced.take(item.name, item.size or 0)
        budget = Budget.of(self.settings)
        return tuple([await self._download(session, item, budget) for item in files])

    async def _download(
        self, session: aiohttp.ClientSession, item: SlackFile, budget: Budget
    ) -> Attachment:
        if item.url is None:  # hidden by the plan's limit, or only known to files.info
            raise not_downloaded(item.name, "Slack", "no download link given")
        url = URL(item.url)
        if not self.allowed(url):
            raise not_downloaded(item.name, "Slack", f"{url.host} is not a Slack file host")
        headers = {"Authorization": f"Bearer {self._token}"}
        timeout = aiohttp.ClientTimeout(total=self.settings.attachment_fetch_timeout)
        try:
            async with session.get(
                url, headers=headers, timeout=timeout, allow_redirects=False
            ) as response:
                kind = response.headers.get(aiohttp.hdrs.CONTENT_TYPE, "")
                # Without access Slack answers with its sign-in page (or a redirect to it).
                if response.status != 200 or kind.startswith("text/html"):
                    why = f"HTTP {response.status}" if response.status != 200 else "sign-in page"
                    why += ": does the app have the files:read scope?"
                    raise not_downloaded(item.name, "Slack", why)
                budget.admit(item.name, response.content_length)
                data = await read_capped(response.content.iter_chunked(CHUNK), item.name, budget)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise not_downloaded(item.name, "Slack", type(exc).__name__) from None
        return Attachment(item.name, item.media_type, data)
