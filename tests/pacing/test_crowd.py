"""The issue's goal: 200 conversations streaming at once through the Telegram channel, against
a Bot API that enforces Telegram's limits with 429s (x10, so that it takes seconds; bench/pacing.py
runs Telegram's own figures).
"""

from __future__ import annotations

from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.helpers import Start

from .crowd import crowd


async def test_two_hundred_conversations_stay_inside_the_limits_and_finish_together(
    telegram: Start, fake: FakeBotAPI
) -> None:
    figures = await crowd(telegram, fake, conversations=200, groups=40, scale=10.0)
    print(figures.line())
    assert figures.delivered == 200
    assert figures.flood_share < 0.01, figures.line()
    assert figures.worst <= 3 * figures.median, figures.line()
