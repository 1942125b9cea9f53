"""The bot's authorization (auth.test), asked once and then answered from memory: bolt's
``authorize``, the readiness probe and the slash command fast path all take it from here.
"""

from __future__ import annotations

import asyncio
import logging

from slack_bolt.authorization import AuthorizeResult
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("slashgate.slack")


class Authorization:
    def __init__(self, client: AsyncWebClient, token: str) -> None:
        self._client = client
        self._token = token
        self._result: AuthorizeResult | None = None
        self._lock = asyncio.Lock()

    async def result(self) -> AuthorizeResult:
        """auth.test's answer; raises what auth.test raised until it succeeds once."""
        if self._result is None:
            async with self._lock:
                if self._result is None:
                    response = await self._client.auth_test()
                    self._result = AuthorizeResult.from_auth_test_response(
                        auth_test_response=response, bot_token=self._token
                    )
        return self._result

    async def ok(self) -> bool:
        """auth.test succeeded (answered from memory once it has)."""
        try:
            await self.result()
        except Exception:
            return False
        return True

    async def warm_up(self) -> None:
        """auth.test before the first request, so that no ack waits for it."""
        try:
            await self.result()
        except Exception as exc:  # retried on the first request
            log.warning("Slack auth.test failed: %s", exc)
