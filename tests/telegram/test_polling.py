"""Long polling: the same intake as the webhook, fed by getUpdates."""

from __future__ import annotations

import asyncio

from .fake_bot_api import FakeBotAPI
from .helpers import PRIVATE, Start, message_update


async def test_polling_takes_updates_once_and_confirms_them_at_stop(
    telegram: Start, fake: FakeBotAPI
) -> None:
    fake.webhook = {"url": "https://old.example/hook"}  # polling must remove it first
    first = message_update(PRIVATE, "/echo polled")
    second = message_update(PRIVATE, "/echo again")
    async with telegram(telegram_mode="polling", telegram_secret=None) as served:
        assert fake.webhook is None
        await fake.push_update(first)
        await fake.wait(lambda: fake.texts(PRIVATE) == ["polled"])
        await fake.push_update(first)  # redelivered (say, after a crash before confirming)
        await fake.push_update(second)
        await fake.wait(lambda: fake.texts(PRIVATE) == ["polled", "again"])
        routes = {route.resource.canonical for route in served.server.app.router.routes()}
        assert "/telegram/webhook" not in routes
    # Nothing keeps polling after the stop.
    coroutines = [getattr(t.get_coro(), "__qualname__", "") for t in asyncio.all_tasks()]
    assert "Dispatcher._polling" not in coroutines
    last = fake.calls_to("getUpdates")[-1]
    assert last.params["offset"] == str(second["update_id"] + 1)
    assert fake.texts(PRIVATE) == ["polled", "again"]
