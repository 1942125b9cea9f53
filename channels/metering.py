"""A platform's HTTP calls counted in the gateway's metrics, for the channels whose platform
client runs on an aiohttp session of theirs (Slack, Discord).
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import ClientHandlerType, ClientMiddlewareType, ClientRequest, ClientResponse

from gateway.api import Meter


def http_outcome(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server_error"
    if status >= 400:
        return "client_error"
    return "ok"


def counted(
    metrics: Meter, platform: str, method_of: Callable[[ClientRequest], str]
) -> ClientMiddlewareType:
    """For a platform's aiohttp ClientSession: each HTTP attempt counted by its HTTP outcome
    (a request that raised: ``network_error``). A client middleware, not an aiohttp trace: a
    trace costs about 30 us per call (its signals at every step of the request), this one call.
    """

    async def middleware(request: ClientRequest, handler: ClientHandlerType) -> ClientResponse:
        try:
            response = await handler(request)
        except Exception:  # a cancelled call is not the platform's doing: not counted
            metrics.platform_request(platform, method_of(request), "network_error")
            raise
        metrics.platform_request(platform, method_of(request), http_outcome(response.status))
        return response

    return middleware
