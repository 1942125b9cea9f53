"""A gateway started on an ACP runtime for a test, and a message sent to it in one call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from gateway.core import Gateway
from gateway.inbound import InboundMessage
from slashgate.registry import build_runtime
from tests.recorder import Recorder

WAIT = 20.0


@asynccontextmanager
async def started(settings: Any, wait: float = WAIT) -> AsyncIterator[Gateway]:
    """A gateway on the runtime of ``settings``, started, then stopped (each within ``wait``)."""
    gw = Gateway(settings, build_runtime(settings))
    await asyncio.wait_for(gw.start(), wait)
    try:
        yield gw
    finally:
        await asyncio.wait_for(gw.stop(), wait)


def inbound(text: str, conversation: str = "c1", bot: str | None = None) -> InboundMessage:
    return InboundMessage("test", conversation, "alice", text, bot_username=bot)


async def send(
    gw: Gateway, text: str, conversation: str = "c1", bot: str | None = None, wait: float = WAIT
) -> Recorder:
    """``text`` from alice in ``conversation``, handled to the end: what the sink got."""
    sink = Recorder()
    await asyncio.wait_for(gw.handle(inbound(text, conversation, bot), sink), wait)
    return sink
