"""The Telegram channel (aiogram 3): on when ``SLASHGATE_TELEGRAM_TOKEN`` is set."""

from .channel import TelegramChannel

__all__ = ["TelegramChannel"]
