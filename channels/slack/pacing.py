"""What goes to a channel waits for its turn under Slack's limits (docs/rate-limits.md): about
one message a second per channel (chat.postMessage; short bursts of 2), chat.update in Tier 3
(50 a minute for the workspace, a budget spent in bursts of up to 10). The Web API clients
pace their own calls: the ``previews`` client's are not urgent, so final replies go first.
A 429 pauses its channel's lane for the Retry-After (every call to that channel waits, the
call that got it included: ``web.RetryAfterHandler`` asks ``flooded``); 429s in several
channels at once pause them all (``Pacer.pause``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from aiohttp import FormData
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from gateway.api import Store
from gateway.pacing import LocalBudget, Pacer, Rate, budget

from .settings import SlackSettings

POSTS = frozenset({"chat.postMessage", "chat.postEphemeral", "chat.startStream"})  # per channel
UPDATES = frozenset({"chat.update"})  # Tier 3, the whole workspace
OFF = Rate(0)
POST_BURST = 2  # "Short bursts >1 allowed" (Slack's rate limits page)
UPDATE_BURST = 10  # Tier 3: "Sporadic bursts are welcome"


@dataclass(frozen=True, slots=True)
class _Call:
    method: str
    channel: str
    urgent: bool


# The paced call in flight in this task: slack_sdk's retry handlers see only its URL.
_IN_FLIGHT: ContextVar[_Call | None] = ContextVar("slashgate_slack_paced_call", default=None)


@dataclass(slots=True)
class Queued:
    """Whether a task's paced call waits for its turn: it has not gone out yet, and a cancel
    there costs no call (see ``watch``).
    """

    waiting: bool = False


_QUEUED: ContextVar[Queued | None] = ContextVar("slashgate_slack_queued", default=None)


def watch() -> Queued:
    """From now on in this task (a preview's), ``waiting`` tells whether its call waits."""
    queued = Queued()
    _QUEUED.set(queued)
    return queued


class SlackPacing:
    def __init__(self, settings: SlackSettings, store: Store) -> None:
        self.per_channel = Rate(settings.slack_rate_channel, 1.0, POST_BURST)
        self.posts = Pacer(LocalBudget(OFF))
        self.updates = Pacer(
            budget(
                store,
                f"{settings.redis_prefix}pacing:slack:chat.update",
                Rate(settings.slack_rate_update, 60.0, UPDATE_BURST),
            )
        )

    def _lane(self, method: str) -> tuple[Pacer, Rate] | None:
        if method in POSTS:
            return self.posts, self.per_channel
        if method in UPDATES:  # one call per channel in the line: fair between them
            return self.updates, OFF
        return None

    @asynccontextmanager
    async def call(self, method: str, channel: str, urgent: bool) -> AsyncIterator[None]:
        """Around one call: its turn first (``watch`` sees the wait), its tokens counted
        once it was answered.
        """
        lane = self._lane(method)
        if lane is None:
            yield
            return
        pacer, rate = lane
        queued = _QUEUED.get()
        if queued is not None:
            queued.waiting = True
        try:
            async with pacer.call(channel, rate, urgent):
                if queued is not None:
                    queued.waiting = False
                yield
        finally:
            if queued is not None:
                queued.waiting = False

    async def flooded(self, seconds: float) -> bool:
        """A 429 for the call in flight: when it is paced, its channel is paused for
        ``seconds`` and its next attempt waits for its turn there (True); else False, and
        the caller waits itself.
        """
        call = _IN_FLIGHT.get()
        lane = None if call is None else self._lane(call.method)
        if call is None or lane is None:
            return False
        pacer, rate = lane
        pacer.pause(call.channel, seconds)
        await pacer.acquire(call.channel, rate, call.urgent)
        return True

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
        call = _Call(api_method, str(given[0]["channel"]), self.urgent) if given else None
        paced = (
            self.pacing.call(call.method, call.channel, call.urgent)
            if call is not None
            else contextlib.nullcontext()
        )
        async with paced:
            token = _IN_FLIGHT.set(call)
            try:
                return await super().api_call(
                    api_method, http_verb=http_verb, files=files, data=data, params=params,
                    json=json, headers=headers, auth=auth,
                )  # fmt: skip
            finally:
                _IN_FLIGHT.reset(token)
