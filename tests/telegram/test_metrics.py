"""Bot API calls, flood control and redelivered updates show in ``GET /metrics``."""

from __future__ import annotations

from tests.metrics import scrape

from .fake_bot_api import FakeBotAPI
from .helpers import PRIVATE, Start, message_update


async def test_api_calls_flood_control_and_redeliveries_are_counted(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        fake.flood("sendMessage", retry_after=1)
        update = message_update(PRIVATE, "/echo hi")
        await served.deliver(update)
        await fake.wait(lambda: fake.texts(PRIVATE) == ["hi"])
        status, _ = await served.post(update)  # Telegram delivers it again: not run twice
        assert status == 200
        await served.post(message_update(PRIVATE, "/echo x"), secret="wrong")
        seen = await scrape(served.server.url)
    assert fake.texts(PRIVATE) == ["hi"]

    assert seen.calls("telegram", "getMe", "ok") == 1
    limited = seen.calls("telegram", "sendMessage", "rate_limited")
    assert (limited, seen.calls("telegram", "sendMessage", "ok")) == (1, 1)
    assert seen.retries("telegram", "sendMessage", "rate_limited") == 1
    assert seen.value("slashgate_dedupe_hits_total", channel="telegram") == 1
    assert seen.value("slashgate_inputs_total", channel="telegram", classification="supported") == 1
    assert seen.value("slashgate_malformed_requests_total", status="401") == 1
