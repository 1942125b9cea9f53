"""Fixtures for the Telegram channel: the fake Bot API and the gateway pointed at it."""

from .fixtures import fake, telegram  # noqa: F401
