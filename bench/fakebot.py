"""A fake Telegram Bot API in a process of its own, for the load benches (bench/loadrig.py).

It answers what a gateway calls (``getMe``, ``sendMessage``, anything else ``true``) as
cheaply as it can and checks nothing (the tests' fake does). It counts ``sendMessage``;
``GET /count`` answers the count and when the last one came (``time.monotonic``: one clock
for every process of the machine). In a process of its own its CPU is measured apart from
the bench's, and several of them share a load that one could not carry.
``python bench/fakebot.py`` prints ``listening <port>``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time

from aiohttp import web

BOT = {"id": 123456, "is_bot": True, "first_name": "Bench", "username": "bench_bot"}
_ME = json.dumps({"ok": True, "result": BOT})
_TRUE = json.dumps({"ok": True, "result": True})


class FakeBot:
    def __init__(self) -> None:
        self.sent = 0
        self.last = 0.0
        self._ids = itertools.count(1)

    async def method(self, request: web.Request) -> web.Response:
        name = request.match_info["method"]
        if name != "sendMessage":
            body = _ME if name == "getMe" else _TRUE
            return web.Response(text=body, content_type="application/json")
        params = await request.post()
        chat = int(str(params.get("chat_id", "0")))
        message = {
            "message_id": next(self._ids), "date": 1700000000, "from": BOT,
            "chat": {"id": chat, "type": "private" if chat > 0 else "group"},
            "text": str(params.get("text", "")),
        }  # fmt: skip
        self.sent += 1
        self.last = time.monotonic()
        return web.Response(
            text=json.dumps({"ok": True, "result": message}), content_type="application/json"
        )

    async def count(self, _: web.Request) -> web.Response:
        return web.json_response({"sent": self.sent, "last": self.last})


async def main() -> None:
    fake = FakeBot()
    app = web.Application()
    app.router.add_post("/bot{token}/{method}", fake.method)
    app.router.add_get("/count", fake.count)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"listening {port}", flush=True)
    await asyncio.Event().wait()  # until the bench kills it


if __name__ == "__main__":
    asyncio.run(main())
