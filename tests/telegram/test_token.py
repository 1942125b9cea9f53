"""The bot token is in every Bot API URL; aiohttp's errors quote that URL. It must never reach a
log line or a traceback: not ours, not aiogram's polling loop, not the start failure.
"""

from __future__ import annotations

import logging
import traceback

import pytest
from aiogram.exceptions import ClientDecodeError, TelegramNetworkError
from pydantic import SecretStr

from channels.telegram import delivery
from gateway.backoff import Backoff
from slashgate.server import StartError, running
from tests.conftest import make_settings

from .fake_bot_api import REDIRECTS, FakeBotAPI
from .helpers import GROUP, PRIVATE, SECRET, Start, message_update


async def test_a_bad_api_base_fails_the_start_without_showing_the_token(
    fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(
        telegram_token=SecretStr(fake.token),
        telegram_api_base="http://[::1",
        telegram_secret=SecretStr(SECRET),
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(StartError) as failed:
        async with running(settings):
            pass
    assert isinstance(failed.value.__cause__, TelegramNetworkError)
    shown = "".join(traceback.format_exception(failed.value))  # what stderr would show
    assert "InvalidUrlClientError: http://[::1/bot<token>/getMe" in shown
    assert fake.token not in shown and fake.token not in caplog.text


async def test_a_server_echoing_the_url_fails_the_start_without_showing_the_token(
    fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.wrong_server("getMe")
    settings = make_settings(
        telegram_token=SecretStr(fake.token),
        telegram_api_base=fake.url,
        telegram_secret=SecretStr(SECRET),
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(StartError) as failed:
        async with running(settings):
            pass
    assert isinstance(failed.value.__cause__, ClientDecodeError)
    shown = "".join(traceback.format_exception(failed.value))
    assert "Cannot POST /bot<token>/getMe" in shown
    assert fake.token not in shown and fake.token not in caplog.text


async def test_a_network_error_on_a_reply_is_logged_without_the_token(
    telegram: Start,
    fake: FakeBotAPI,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(delivery, "RETRY", Backoff(base=0.01))
    fake.redirect_loop("sendMessage", calls=Backoff().attempts)  # every attempt fails
    with caplog.at_level(logging.DEBUG):
        async with telegram() as served:
            await served.deliver(message_update(GROUP, "/echo lost"))
            assert fake.texts(GROUP) == []
    assert "TooManyRedirects" in caplog.text  # the failure was logged
    assert fake.token not in caplog.text


async def test_polling_through_a_network_error_logs_no_token(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    fake.redirect_loop("getUpdates")  # the first getUpdates fails, aiogram's loop retries
    with caplog.at_level(logging.DEBUG):
        async with telegram(telegram_mode="polling", telegram_secret=None):
            await fake.wait(lambda: len(fake.calls_to("getUpdates")) > REDIRECTS)
            await fake.push_update(message_update(PRIVATE, "/echo back"))
            await fake.wait(lambda: fake.texts(PRIVATE) == ["back"])
    assert "Failed to fetch updates - TelegramNetworkError" in caplog.text
    assert fake.token not in caplog.text
