"""The Web API clients every Slack sink of the channel shares, and its streaming settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import ClientSession
from slack_sdk.web.async_client import AsyncWebClient


@dataclass
class Outbox:
    """What every sink of the channel shares: the Web API clients and streaming settings.
    ``client`` retries what must arrive (final replies, permission prompts); ``previews``
    (streaming, the message updated while the reply grows) drops a call that fails: the
    final reply replaces what it would have shown.
    """

    client: AsyncWebClient
    previews: AsyncWebClient
    update_interval: float = 1.5  # chat.update is Tier 3 (about 50 a minute per channel)
    native_streaming: bool = True  # chat.startStream works until Slack says otherwise
    session: ClientSession | None = field(default=None, repr=False)
