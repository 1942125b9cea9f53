"""Slack Web API and ``response_url`` clients, with HTTP 429 ``Retry-After`` waited out."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import ClientSession
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

log = logging.getLogger("slashgate.slack")
# A response_url is a capability (whoever has it may post): slack_sdk logs request URLs at
# DEBUG, so its webhook client gets a logger that never goes below INFO.
_webhook_log = logging.getLogger("slashgate.slack.response_url")
_webhook_log.setLevel(logging.INFO)

MAX_RATE_LIMIT_RETRIES = 3
MAX_RETRY_AFTER = 60.0  # seconds; Slack's per-minute windows never ask for more


class RetryAfterHandler(AsyncRateLimitErrorRetryHandler):
    """Waits exactly the ``Retry-After`` Slack asks for (the built-in adds up to a second)."""

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if response is None:
            raise error or RuntimeError("rate limited without a response")
        state.next_attempt_requested = True
        await asyncio.sleep(retry_after(response.headers))
        state.increment_current_attempt()


def retry_after(headers: dict[str, Any]) -> float:
    """Seconds from a ``Retry-After`` header (slack_sdk gives header values as lists)."""
    for key, value in headers.items():
        if key.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) and value else value
            try:
                return min(max(float(raw), 0.0), MAX_RETRY_AFTER)
            except (TypeError, ValueError):
                break
    return 1.0


def retry_handlers() -> list[AsyncRetryHandler]:
    return [
        AsyncConnectionErrorRetryHandler(),
        RetryAfterHandler(max_retry_count=MAX_RATE_LIMIT_RETRIES),
    ]


def web_client(base_url: str, token: str | None) -> AsyncWebClient:
    url = base_url if base_url.endswith("/") else base_url + "/"
    return AsyncWebClient(token=token, base_url=url, retry_handlers=retry_handlers())


async def respond(session: ClientSession | None, response_url: str, body: dict[str, Any]) -> bool:
    """POST a message to a slash command's or an action's ``response_url``."""
    client = AsyncWebhookClient(
        response_url, session=session, logger=_webhook_log, retry_handlers=retry_handlers()
    )
    try:
        result = await client.send_dict(body)
    except Exception:
        log.warning("response_url request failed", exc_info=True)
        return False
    if result.status_code >= 300:
        log.warning("response_url answered %s: %s", result.status_code, result.body[:200])
        return False
    return True
