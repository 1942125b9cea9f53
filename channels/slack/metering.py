"""Every Slack HTTP call counted in the gateway's metrics: each attempt (a client middleware
on the channel's session, Web API and response_url alike) and each retry slack_sdk decides on.
"""

from __future__ import annotations

from aiohttp import ClientMiddlewareType
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from channels.metering import counted as count_attempts
from channels.metering import http_outcome
from gateway.api import Meter

PLATFORM = "slack"


def method_of(url: str, base: str) -> str:
    """``chat.postMessage`` for a Web API URL; ``response_url`` for anything else."""
    return url[len(base) :].split("?")[0] if url.startswith(base) else "response_url"


def counted(metrics: Meter, base: str) -> ClientMiddlewareType:
    """For the channel's ClientSession: one count per HTTP attempt, by outcome (HTTP level:
    Slack answers its API errors with 200 and ``ok: false``, counted as ``ok`` here; a
    cancelled call is not counted).
    """
    return count_attempts(metrics, PLATFORM, lambda request: method_of(str(request.url), base))


class CountedRetry(AsyncRetryHandler):
    """A client's retry handler, each retry it decides on counted."""

    def __init__(self, inner: AsyncRetryHandler, metrics: Meter, base: str) -> None:
        super().__init__(inner.max_retry_count, inner.interval_calculator)
        self.inner, self.metrics, self.base = inner, metrics, base

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return await self.inner.can_retry_async(
            state=state, request=request, response=response, error=error
        )

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        status = response.status_code if response is not None else None
        reason = "network_error" if status is None else http_outcome(status)
        self.metrics.platform_retry(PLATFORM, method_of(request.url, self.base), reason)
        await self.inner.prepare_for_next_attempt_async(
            state=state, request=request, response=response, error=error
        )


def count_retries(client: AsyncWebClient, metrics: Meter) -> None:
    client.retry_handlers = [
        CountedRetry(h, metrics, client.base_url) for h in client.retry_handlers
    ]
