"""The Telegram fixtures: the fake Bot API and the gateway pointed at it (tests/telegram's and
tests/adversarial's conftest take them from here)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from .fake_bot_api import FakeBotAPI
from .helpers import Start, starter


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI() as api:
        yield api


@pytest.fixture
def telegram(gateway_server: Any, fake: FakeBotAPI) -> Start:
    """``async with telegram(runtime=None, **settings) as served:`` the gateway with Telegram."""
    return starter(gateway_server, fake)
