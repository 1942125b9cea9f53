"""The Redis store the shared budget runs its script on, opened for a test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from gateway.state.redis import RedisStore


@asynccontextmanager
async def opened(url: str) -> AsyncIterator[RedisStore]:
    store = RedisStore(url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
