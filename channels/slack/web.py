"""Slack Web API and ``response_url`` clients: HTTP 429 ``Retry-After`` waited out, and for
what must arrive, transient failures tried again (``gateway.backoff``).

Transient: a 5xx, an answer that is not the Web API's JSON (a proxy's HTML error page,
whatever its status), a connection refused, reset or closed mid-answer, a call that timed
out. A dropped connection or a timeout after the request went out is ambiguous (Slack may
have posted the message): chat.postMessage is sent again all the same, since a repeated
message beats a missing one and Slack has no idempotency key; chat.appendStream is not
(it would repeat text inside the message), and the sink falls back to posting the reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import (
    ClientConnectionError,
    ClientConnectorError,
    ClientPayloadError,
    ClientSession,
)
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient
from slack_sdk.webhook.webhook_response import WebhookResponse

from gateway.backoff import Backoff, retrying

from .pacing import PacedWebClient, SlackPacing

log = logging.getLogger("slashgate.slack")
# A response_url is a capability (whoever has it may post): slack_sdk logs request URLs at
# DEBUG, so its webhook client gets a logger that never goes below INFO.
_webhook_log = logging.getLogger("slashgate.slack.response_url")
_webhook_log.setLevel(logging.INFO)
# slack_sdk formats its DEBUG dump of every Web API request and answer whenever its logger's
# own level is unset, shown or not: the clients log here, at DEBUG only if the gateway does.
client_log = logging.getLogger("slashgate.slack.web")

MAX_RATE_LIMIT_RETRIES = 3
MAX_RETRY_AFTER = 60.0  # seconds; Slack's per-minute windows never ask for more
RETRY = Backoff()  # for what must arrive
NOT_REPEATABLE = {"chat.appendStream"}  # sent twice, the text shows twice
# Whatever a failed Web API call raises, once the handlers have given up.
FAILURES = (SlackApiError, ClientConnectionError, ClientPayloadError, asyncio.TimeoutError)


class Waiting(AsyncRetryHandler):
    """A handler that, once it said a call may be tried again, waits ``wait(...)`` seconds;
    the retry is counted first when the channel's metering set ``counted``
    (``metering.count_retries``).
    """

    counted: Callable[[HttpRequest, HttpResponse | None], None] | None = None

    def wait(self, state: RetryState, response: HttpResponse | None) -> float:
        raise NotImplementedError

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if self.counted is not None:
            self.counted(request, response)
        state.next_attempt_requested = True
        await self.pause(self.wait(state, response))
        state.increment_current_attempt()

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class RetryAfterHandler(Waiting, AsyncRateLimitErrorRetryHandler):
    """Waits exactly the ``Retry-After`` Slack asks for (the built-in adds up to a second);
    a paced call's whole channel waits with it (``SlackPacing.flooded``).
    """

    def __init__(self, flooded: Callable[[float], Awaitable[bool]] | None = None) -> None:
        super().__init__(max_retry_count=MAX_RATE_LIMIT_RETRIES)
        self.flooded = flooded

    def wait(self, state: RetryState, response: HttpResponse | None) -> float:
        return 1.0 if response is None else retry_after(response.headers)

    async def pause(self, seconds: float) -> None:
        if self.flooded is None or not await self.flooded(seconds):
            await asyncio.sleep(seconds)


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


class TransientErrorHandler(Waiting):
    """Tries a call again after a transient failure (see the module's docstring), within
    the bounds of ``policy``; each retry is logged at INFO.
    """

    def __init__(self, policy: Backoff) -> None:
        super().__init__(max_retry_count=policy.attempts - 1)
        self.policy = policy

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        method = request.url.rsplit("/", 1)[-1]
        reason = transient(method, response, error)
        if reason is None:
            return False
        now = asyncio.get_running_loop().time()
        values = state.custom_values = state.custom_values or {}
        first_failure = values.setdefault("first_failure", now)
        delay = self.policy.delay(state.current_attempt)
        if not self.policy.allows(now + delay - first_failure):
            return False
        values["delay"] = delay
        log.info("%s failed (%s): trying again in %.1f s", method, reason, delay)
        return True

    def wait(self, state: RetryState, response: HttpResponse | None) -> float:
        return float((state.custom_values or {}).get("delay", 0.0))


def transient(method: str, response: HttpResponse | None, error: Exception | None) -> str | None:
    """What went wrong, when another attempt may cure it; None otherwise."""
    if error is not None:
        if isinstance(error, SlackApiError):  # slack_sdk's word for a body it could not parse
            return "an answer that is not JSON"
        if isinstance(error, ClientConnectorError):  # not sent: always safe to send again
            return type(error).__name__
        if isinstance(error, (ClientConnectionError, ClientPayloadError, asyncio.TimeoutError)):
            return None if method in NOT_REPEATABLE else type(error).__name__
        return None
    if response is None or response.status_code == 429:
        return None
    if response.status_code >= 500:
        return f"HTTP {response.status_code}"
    if response.body is None:
        return f"HTTP {response.status_code}, not JSON"
    return None


def retry_handlers(
    policy: Backoff | None, pacing: SlackPacing | None = None
) -> list[AsyncRetryHandler]:
    """Flood control always (with ``pacing``, a 429 pauses its channel); transient failures
    too when a ``policy`` is given.
    """
    flooded = None if pacing is None else pacing.flooded
    handlers: list[AsyncRetryHandler] = [RetryAfterHandler(flooded)]
    if policy is not None:
        handlers.append(TransientErrorHandler(policy))
    return handlers


def web_client(
    base_url: str, token: str | None, *, persistent: bool = True, pacing: SlackPacing | None = None
) -> AsyncWebClient:
    """A Web API client; ``persistent`` for what must arrive, else (previews) a transient
    failure drops the call; with ``pacing``, its calls keep Slack's limits (previews last).
    """
    url = base_url if base_url.endswith("/") else base_url + "/"
    handlers = retry_handlers(RETRY if persistent else None, pacing)
    common: dict[str, Any] = {
        "token": token, "base_url": url, "retry_handlers": handlers, "logger": client_log
    }  # fmt: skip
    if pacing is None:
        return AsyncWebClient(**common)
    return PacedWebClient(pacing, persistent, **common)


def error_code(exc: BaseException) -> str:
    """Slack's error code when the answer was the Web API's JSON, else what went wrong."""
    if isinstance(exc, SlackApiError):
        data = getattr(exc.response, "data", None)
        if isinstance(data, dict) and data.get("error"):
            return str(data["error"])
        status = getattr(exc.response, "status_code", None) or getattr(exc.response, "status", None)
        return f"HTTP {status}, not the Web API's JSON"
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"[:200]


class _ServerError(Exception):
    """A response_url answered 5xx (slack_sdk's webhook client retries only 429 itself)."""


def _respond_transient(exc: Exception) -> str | None:
    if isinstance(exc, _ServerError):
        return f"response_url failed (HTTP {exc})"
    reason = transient("response_url", None, exc)
    return None if reason is None else f"response_url failed ({reason})"


async def respond(session: ClientSession | None, response_url: str, body: dict[str, Any]) -> bool:
    """POST a message to a slash command's or an action's ``response_url``, persistently."""
    client = AsyncWebhookClient(
        response_url, session=session, logger=_webhook_log, retry_handlers=retry_handlers(None)
    )

    async def send() -> WebhookResponse:
        result = await client.send_dict(body)
        if result.status_code >= 500:
            raise _ServerError(result.status_code)
        return result

    try:
        result = await retrying(send, _respond_transient, RETRY)
    except (_ServerError, *FAILURES) as exc:
        reason = f"HTTP {exc}" if isinstance(exc, _ServerError) else error_code(exc)
        log.warning("response_url request failed: %s", reason)
        return False
    if result.status_code >= 300:
        log.warning("response_url answered %s: %s", result.status_code, result.body[:200])
        return False
    return True
