"""Every Slack HTTP call counted in the gateway's metrics: each attempt (a client middleware
on the channel's session, Web API and response_url alike) and each retry the Web API
client's handlers decide on (told by the handlers themselves: no wrapper around them).
"""

from __future__ import annotations

from aiohttp import ClientMiddlewareType
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.web.async_client import AsyncWebClient

from channels.metering import counted as count_attempts
from channels.metering import http_outcome
from gateway.api import Meter

from .web import Waiting

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


def count_retries(client: AsyncWebClient, metrics: Meter) -> None:
    """Each retry the client's handlers (this channel's, channels/slack/web.py) decide on,
    counted by its reason.
    """
    base = client.base_url

    def count(request: HttpRequest, response: HttpResponse | None) -> None:
        status = response.status_code if response is not None else None
        reason = "network_error" if status is None else http_outcome(status)
        metrics.platform_retry(PLATFORM, method_of(request.url, base), reason)

    for handler in client.retry_handlers:
        assert isinstance(handler, Waiting)  # made by web.retry_handlers
        handler.counted = count
