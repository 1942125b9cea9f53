"""The fake Discord with the bot-wide limit Discord enforces (50 requests a second; here a
rate the test sets): a channel's call beyond it is answered 429 with ``"global": true``, as
Discord answers, and hikari then holds every request of the bot whose bucket it knows until
the Retry-After has passed. Interaction webhooks are outside the global limit (Discord's
rule): never refused, and answered with their bucket's headers, as Discord answers them, so
that hikari knows those buckets.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .fake import FakeDiscord

API = "/api/v10"
# An interaction's webhook: 5 calls in 5 seconds per token, never reached in these tests.
HOOK_HEADERS = {
    "X-RateLimit-Bucket": "interaction-webhook",
    "X-RateLimit-Limit": "5",
    "X-RateLimit-Remaining": "4",
    "X-RateLimit-Reset-After": "1.000",
}


@dataclass
class LimitedDiscord(FakeDiscord):
    rate: float = 50.0  # the bot's calls a second, with no burst: evenly spaced
    refused: int = 0  # calls answered 429
    _due: float = 0.0  # when the next call of the bot may come

    def app(self) -> web.Application:
        app = super().app()
        app.middlewares.append(self._limit)
        return app

    @web.middleware
    async def _limit(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith(f"{API}/channels/"):
            now = time.monotonic()
            wait = self._due - now
            if wait > 0:
                self.refused += 1
                body = {"message": "You are being rate limited.", "retry_after": wait,
                        "global": True}  # fmt: skip
                headers = {"Retry-After": f"{wait:.3f}", "X-RateLimit-Global": "true",
                           "X-RateLimit-Scope": "global"}  # fmt: skip
                return web.json_response(body, status=429, headers=headers)
            self._due = max(self._due, now) + 1.0 / self.rate
        response = await handler(request)
        if request.path.startswith(f"{API}/webhooks/"):
            response.headers.update(HOOK_HEADERS)
        return response
