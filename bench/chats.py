"""The gateway's Slack and Telegram channels set up for a bench against a fake platform in
the same process, and a user's message sent to them as the platform sends it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slashgate.config import Settings  # noqa: E402
from tests.conftest import make_settings  # noqa: E402
from tests.slack.slack_fake import command_body, signed_headers  # noqa: E402

TOKEN = "123456:bench-chats"
SECRET = "bench-chats-secret"
SLACK_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TELEGRAM_HEADERS = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
FORM = "application/x-www-form-urlencoded"


def telegram_settings(api: str) -> Settings:
    return make_settings(
        telegram_token=SecretStr(TOKEN),
        telegram_secret=SecretStr(SECRET),
        telegram_api_base=api,
        telegram_mode="webhook",
    )


def slack_settings(api: str) -> Settings:
    return make_settings(
        slack_bot_token=SecretStr("xoxb-bench"),
        slack_signing_secret=SecretStr(SLACK_SECRET),
        slack_api_base=api,
    )


async def telegram_update(http: aiohttp.ClientSession, url: str, update: dict[str, Any]) -> float:
    """Post ``update`` to the gateway at ``url``; when it was sent."""
    sent = time.monotonic()
    async with http.post(f"{url}/telegram/webhook", json=update,
                         headers=TELEGRAM_HEADERS) as answer:  # fmt: skip
        await answer.read()
    return sent


async def slack_command(
    http: aiohttp.ClientSession, url: str, text: str, channel: str, user: str, response_url: str
) -> float:
    """``/agent text`` in ``channel`` from ``user``, posted to the gateway at ``url``; when it
    was sent.
    """
    body = command_body("/agent", text, channel=channel, user=user, response_url=response_url)
    headers = signed_headers(body, FORM, secret=SLACK_SECRET)
    sent = time.monotonic()
    async with http.post(f"{url}/slack/events", data=body.encode(), headers=headers) as answer:
        await answer.read()
    return sent
