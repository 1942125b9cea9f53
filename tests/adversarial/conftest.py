"""The adversarial Telegram tests start the gateway as tests/telegram does."""

from tests.telegram.fixtures import fake, telegram  # noqa: F401
