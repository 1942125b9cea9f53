"""Fake platforms for bench/latency.py that enforce the published rate limits: a call beyond
one is answered 429 with a Retry-After, as the platform would. Each limit is a token bucket
(GCRA) of the platform's rate and the burst it tolerates (docs/rate-limits.md); written here
on its own, not with the gateway's pacing code, which is what they check.

- Telegram: 30 messages a second per bot (bursts of 30: "or so"), 1 a second in a chat
  (short bursts of 3), 20 a minute in a group (bursts of 3); 429 with ``retry_after``.
- Slack: chat.postMessage 1 a second per channel (bursts of 2), chat.update 50 a minute for
  the workspace (bursts of 10); 429 ``ratelimited`` with ``Retry-After``.
- Discord: an interaction's webhook (its token) 5 calls in 5 seconds, told in the
  ``X-RateLimit-*`` headers as Discord does; interactions are not bound to the global limit.

Each tells the bench when a conversation's reply shows (``expect``) and counts the calls and
the 429s. Their CPU is the bench process's, as the gateway's is (one process, one loop).
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.discord import FakeDiscord  # noqa: E402
from bench.platforms import FakeSlack, FakeTelegram  # noqa: E402

GRACE = 0.02  # seconds a call may come early: the network's jitter, as a platform allows


@dataclass
class Limit:
    rate: float  # calls a second
    burst: int
    due: dict[str, float] = field(default_factory=dict)  # key -> when the bucket is full

    def over(self, key: str, now: float) -> float:
        """Seconds this call comes too early (0: it may go)."""
        interval = 1.0 / self.rate
        full = self.due.get(key, now)
        return max(0.0, full - now - (self.burst - 1) * interval - GRACE)

    def count(self, key: str, now: float) -> None:
        self.due[key] = max(self.due.get(key, now), now) + 1.0 / self.rate


class Shown:
    """When each chat's (or interaction's) latest reply arrived, by the fake's clock."""

    shown_at: dict[str, float]

    def shown(self, key: str) -> None:
        self.shown_at[key] = time.monotonic()


def admit(limits: list[tuple[Limit, str]]) -> float:
    """Count the call against every limit, or say how long to wait (nothing counted)."""
    now = time.monotonic()
    wait = max((limit.over(key, now) for limit, key in limits), default=0.0)
    if wait <= 0:
        for limit, key in limits:
            limit.count(key, now)
    return wait


class LimitedTelegram(FakeTelegram, Shown):
    COUNTED = frozenset({"sendMessage", "editMessageText", "sendMessageDraft"})

    def __init__(self) -> None:
        super().__init__()
        self.shown_at = {}
        self.bot = Limit(30.0, 30)
        self.chat = Limit(1.0, 3)
        self.group = Limit(20.0 / 60, 3)
        self.refused = 0

    async def method(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        if name in self.COUNTED:
            params = dict(await request.post())
            chat = int(str(params.get("chat_id", "0")))
            per_chat = self.chat if chat > 0 else self.group
            wait = admit([(self.bot, "bot"), (per_chat, str(chat))])
            if wait > 0:
                self.refused += 1
                self.record(request, f"{name} (429)")
                retry = math.ceil(wait)
                return web.json_response(
                    {
                        "ok": False,
                        "error_code": 429,
                        "description": f"Too Many Requests: retry after {retry}",
                        "parameters": {"retry_after": retry},
                    },
                    status=429,
                )
        return await super().method(request)

    def replied(self, chat: str, text: str) -> None:
        self.shown(chat)
        super().replied(chat, text)


class LimitedSlack(FakeSlack, Shown):
    def __init__(self) -> None:
        super().__init__()
        self.shown_at = {}
        self.posts = Limit(1.0, 2)
        self.updates = Limit(50.0 / 60, 10)
        self.refused = 0

    async def method(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        if name in ("chat.postMessage", "chat.update"):
            params = (
                await request.json()
                if request.content_type == "application/json"
                else dict(await request.post())
            )
            channel = str(params.get("channel", ""))
            limit = (self.posts, channel) if name == "chat.postMessage" else (self.updates, "team")
            wait = admit([limit])
            if wait > 0:
                self.refused += 1
                self.record(request, f"{name} (429)")
                return web.json_response(
                    {"ok": False, "error": "ratelimited"},
                    status=429,
                    headers={"Retry-After": str(math.ceil(wait))},
                )
        return await super().method(request)

    def replied(self, chat: str, text: str) -> None:
        self.shown(chat)
        super().replied(chat, text)


class LimitedDiscord(FakeDiscord, Shown):
    WEBHOOK = 5  # calls per token in PER seconds
    PER = 5.0

    def __init__(self) -> None:
        super().__init__()
        self.shown_at = {}
        self.hooks = Limit(self.WEBHOOK / self.PER, self.WEBHOOK)
        self.calls: Counter[str] = Counter()
        self.refused = 0

    async def _edit(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        wait = admit([(self.hooks, token)])
        headers = self._headers(token)
        kind = "PATCH @original" if request.method == "PATCH" else "POST follow-up"
        if wait > 0:
            self.refused += 1
            self.calls[f"{kind} (429)"] += 1
            body: dict[str, Any] = {
                "message": "You are being rate limited.",
                "retry_after": wait,
                "global": False,
            }
            headers.update({"Retry-After": f"{wait:.3f}", "X-RateLimit-Scope": "shared"})
            return web.json_response(body, status=429, headers=headers)
        self.calls[kind] += 1
        self.shown(token)
        response = await super()._edit(request)
        response.headers.update(headers)
        return response

    def _headers(self, token: str) -> dict[str, str]:
        now = time.monotonic()
        full = self.hooks.due.get(token, now)
        interval = 1.0 / self.hooks.rate
        used = max(0, math.ceil((full - now) / interval))
        return {
            "X-RateLimit-Limit": str(self.WEBHOOK),
            "X-RateLimit-Remaining": str(max(0, self.WEBHOOK - used)),
            "X-RateLimit-Reset-After": f"{max(0.0, full - now):.3f}",
            "X-RateLimit-Bucket": "interaction-webhook",
        }
