"""Fixtures for the access tests: the fake Bot API and the gateway pointed at it."""

from tests.telegram.fixtures import fake, telegram  # noqa: F401
