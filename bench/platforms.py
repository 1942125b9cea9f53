"""Minimal fake platforms in the bench's own process: a Telegram Bot API and a Slack Web API
that answer just enough for a bot to run, and tell the load generator when a chat's reply
arrived (so that each simulated user waits for its answer before writing again).

They check nothing: the tests' fakes (tests/telegram, tests/slack) do that. Here every
request costs the fake as little as possible, and the fake's CPU time is the client's, never
the server's under measurement.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from collections import Counter, defaultdict, deque
from typing import Any

from aiohttp import web

BOT = {"id": 123456, "is_bot": True, "first_name": "Bench", "username": "bench_bot"}
SLACK_AUTH = {
    "ok": True,
    "url": "https://bench.slack.com/",
    "team": "Bench",
    "user": "bench",
    "team_id": "T1",
    "user_id": "UBOT",
    "bot_id": "BBOT",
}


async def listen(app: web.Application) -> tuple[web.AppRunner, str]:
    """Serve ``app`` on a free port of 127.0.0.1: its runner and URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


class FakePlatform:
    """Records calls per method and resolves the oldest waiter of a chat on each reply."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.peers: set[tuple[str, int]] = set()  # client ends seen: new TCP connections
        self._waiters: defaultdict[str, deque[asyncio.Future[str]]] = defaultdict(deque)
        self._runner: web.AppRunner | None = None
        self.url = ""

    def expect(self, chat: str) -> asyncio.Future[str]:
        """A future for the next reply to ``chat`` (its text)."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiters[chat].append(future)
        return future

    def replied(self, chat: str, text: str) -> None:
        waiters = self._waiters.get(chat)
        while waiters:
            future = waiters.popleft()
            if not future.done():
                future.set_result(text)
                return

    def record(self, request: web.Request, method: str) -> None:
        self.calls[method] += 1
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer:
            self.peers.add(peer[:2])

    def app(self) -> web.Application:
        raise NotImplementedError

    async def start(self) -> str:
        self._runner, self.url = await listen(self.app())
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


class FakeTelegram(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self.method)
        return app

    async def method(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        self.record(request, name)
        params: dict[str, Any] = dict(await request.post())
        result: Any = True
        if name == "getMe":
            result = BOT
        elif name in ("sendMessage", "editMessageText"):
            chat = str(params.get("chat_id"))
            text = str(params.get("text", ""))
            result = {
                "message_id": next(self._ids),
                "date": 1700000000,
                "chat": {"id": int(chat), "type": "private" if int(chat) > 0 else "group"},
                "from": BOT,
                "text": text,
            }
            self.replied(chat, text)
        return web.json_response({"ok": True, "result": result})


class FakeSlack(FakePlatform):
    def __init__(self) -> None:
        super().__init__()
        self._ts = itertools.count(1)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/{method}", self.method)
        app.router.add_post("/response/{channel}", self.response_url)
        return app

    @property
    def api(self) -> str:
        return self.url + "/api/"

    def response_url_for(self, channel: str) -> str:
        return f"{self.url}/response/{channel}"

    async def method(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        self.record(request, name)
        if request.content_type == "application/json":
            params = await request.json()
        else:
            params = dict(await request.post())
        if name == "auth.test":
            return web.json_response(SLACK_AUTH)
        channel = str(params.get("channel", ""))
        if name == "chat.postMessage":
            self.replied(channel, str(params.get("text", "")))
        return web.json_response(
            {"ok": True, "channel": channel, "ts": f"1700000000.{next(self._ts):06d}"}
        )

    async def response_url(self, request: web.Request) -> web.Response:
        self.record(request, "response_url")
        body = json.loads(await request.read())
        self.replied(request.match_info["channel"], str(body.get("text", "")))
        return web.Response(text="ok")


class QueuedSlack(FakeSlack):
    """The fake Slack in a process of its own (``python bench/platforms.py``), as Slack is
    another machine: its work never delays the client reading an ack. It keeps each
    channel's replies until ``GET /replies/{channel}`` takes the oldest (waiting for one).
    """

    def __init__(self) -> None:
        super().__init__()
        self._replies: defaultdict[str, asyncio.Queue[str]] = defaultdict(asyncio.Queue)

    def app(self) -> web.Application:
        app = super().app()
        app.router.add_get("/replies/{channel}", self.next_reply)
        return app

    def replied(self, chat: str, text: str) -> None:
        self._replies[chat].put_nowait(text)

    async def next_reply(self, request: web.Request) -> web.Response:
        channel = request.match_info["channel"]
        replies = self._replies[channel]
        text = await replies.get()
        if replies.empty():
            del self._replies[channel]  # one queue per channel with a reply still to take
        return web.Response(text=text)


async def _serve_queued_slack() -> None:
    """Serve a QueuedSlack until standard input closes; its URL first, on standard output."""
    fake = QueuedSlack()
    print(await fake.start(), flush=True)
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    await stdin.read()
    await fake.stop()


if __name__ == "__main__":
    asyncio.run(_serve_queued_slack())
