"""What goes to a channel waits for its turn under Slack's limits (docs/rate-limits.md): about
one message a second per channel (chat.postMessage), chat.update in Tier 3 (about 50 a minute
for the workspace). The Web API clients pace their own calls: the ``previews`` client's are
not urgent, so final replies go first. A 429 is waited out by the call that got it
(``web.RetryAfterHandler``).
"""

from __future__ import annotations

from typing import Any

from aiohttp import FormData
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from gateway.pacing import LocalBudget, Pacer, Rate, budget

from .settings import SlackSettings

POSTS = frozenset({"chat.postMessage", "chat.postEphemeral", "chat.startStream"})  # per channel
UPDATES = frozenset({"chat.update"})  # Tier 3, the whole workspace
OFF = Rate(0)


class SlackPacing:
    def __init__(self, settings: SlackSettings) -> None:
        self.per_channel = Rate(settings.slack_rate_channel)
        self.posts = Pacer(LocalBudget(OFF))
        shared = settings.redis_url if settings.store == "redis" else None
        self.updates = Pacer(
            budget(
                shared.get_secret_value() if shared else None,
                f"{settings.redis_prefix}pacing:slack:chat.update",
                Rate(settings.slack_rate_update, 60.0),
            )
        )

    async def pace(self, method: str, channel: str | None, urgent: bool) -> None:
        if channel is None:
            return
        if method in POSTS:
            await self.posts.acquire(channel, self.per_channel, urgent)
        elif method in UPDATES:  # one call per channel in the line: fair between them
            await self.updates.acquire(channel, OFF, urgent)

    async def prepare(self) -> None:
        await self.updates.budget.prepare()

    async def aclose(self) -> None:
        await self.updates.aclose()


class PacedWebClient(AsyncWebClient):
    def __init__(self, pacing: SlackPacing, urgent: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pacing = pacing
        self.urgent = urgent

    async def api_call(
        self,
        api_method: str,
        *,
        http_verb: str = "POST",
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | FormData | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> AsyncSlackResponse:
        given = [d for d in (json, data, params) if isinstance(d, dict) and d.get("channel")]
        channel = str(given[0]["channel"]) if given else None
        await self.pacing.pace(api_method, channel, self.urgent)
        return await super().api_call(
            api_method, http_verb=http_verb, files=files, data=data, params=params, json=json,
            headers=headers, auth=auth,
        )  # fmt: skip
