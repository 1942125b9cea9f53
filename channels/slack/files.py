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

from gateway.attachments import file_name, media_type
from gateway.downloads import Downloader, FileHosts

from .settings import SlackSettings

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


class SlackFiles(Downloader):
    def __init__(self, settings: SlackSettings, token: str) -> None:
        hosts = FileHosts(settings.slack_api_base, domain=SLACK_DOMAIN)
        headers = {"Authorization": f"Bearer {token}"}
        super().__init__(settings, "Slack", hosts, headers=headers, check=_signed_in)


def _signed_in(response: aiohttp.ClientResponse) -> str | None:
    """Why the answer is not the file: without access Slack answers with its sign-in page
    (or a redirect to it).
    """
    kind = response.headers.get(aiohttp.hdrs.CONTENT_TYPE, "")
    if response.status == 200 and not kind.startswith("text/html"):
        return None
    why = f"HTTP {response.status}" if response.status != 200 else "sign-in page"
    return why + ": does the app have the files:read scope?"
