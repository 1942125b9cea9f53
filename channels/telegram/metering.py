"""Every Bot API call counted in the gateway's metrics: each attempt, by method and outcome."""

from __future__ import annotations

from typing import Any

from aiogram import Bot
from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import (
    AiogramError,
    ClientDecodeError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.methods import TelegramMethod
from aiogram.methods.base import TelegramType

from gateway.api import Meter

PLATFORM = "telegram"


class Metered(BaseRequestMiddleware):
    """Registered after ``Requests`` (so inside it): it sees every attempt, the ones that
    flood control makes ``Requests`` send again included.
    """

    def __init__(self, metrics: Meter) -> None:
        self.metrics = metrics

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[TelegramType],
        bot: Bot,
        method: TelegramMethod[TelegramType],
    ) -> Any:
        name = method.__api_method__
        try:
            result = await make_request(bot, method)
        except AiogramError as exc:
            self.metrics.platform_request(PLATFORM, name, _outcome(exc))
            if isinstance(exc, TelegramRetryAfter):  # Requests waits it out and sends again
                self.metrics.platform_retry(PLATFORM, name, "rate_limited")
            raise
        self.metrics.platform_request(PLATFORM, name, "ok")
        return result


def _outcome(exc: AiogramError) -> str:
    if isinstance(exc, TelegramRetryAfter):
        return "rate_limited"
    if isinstance(exc, (TelegramServerError, ClientDecodeError)):
        return "server_error"
    if isinstance(exc, TelegramNetworkError):
        return "network_error"
    return "client_error"
