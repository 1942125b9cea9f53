"""A local Anthropic Messages API (``POST /v1/messages``, streaming SSE or not) that
claude-agent-acp uses as its model (``ANTHROPIC_BASE_URL``).

It answers by the user's last text, so that tests choose the model's behaviour in their prompt:
- containing ``[hold]``: the first words, then the stream stays open (the test cancels the
  turn) until the mock is stopped;
- anything else: ``echo: <text>`` in a few text deltas.
Every request body is recorded, so tests can see what the agent asked its model. The usage it
reports has no cache counts, as some Anthropic-compatible servers answer: claude-agent-acp 0.23
then sends ``usage_update`` with ``used: null`` (the sum it makes is NaN).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.http import serve_app

HOLD = 60.0  # the longest a held answer stays open (the test cancels well before)


@dataclass
class MockAnthropic:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    holding: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)  # ends held answers

    def user_texts(self) -> list[str]:
        """The user's last text in every streamed request, in order."""
        return [user_text(body) for body in self.requests if body.get("stream")]


def user_text(body: dict[str, Any]) -> str:
    """The last text the user wrote: the last user message's last text block that is not one
    of the notes the agent adds (``<system-reminder>`` and the like).
    """
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [
            block.get("text", "")
            for block in content or ()
            if isinstance(block, dict) and block.get("type") == "text"
        ]
        for text in reversed(texts):
            if not text.lstrip().startswith("<"):
                return text
    return ""


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _start(model: str) -> bytes:
    message = {
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 1},
    }
    return _event("message_start", {"type": "message_start", "message": message})


def _delta(text: str) -> bytes:
    delta = {"type": "text_delta", "text": text}
    return _event(
        "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    )


def _opening(model: str) -> list[bytes]:
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    return [_start(model), _event("content_block_start", block)]


def _closing(output_tokens: int) -> list[bytes]:
    stop = {"stop_reason": "end_turn", "stop_sequence": None}
    return [
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event(
            "message_delta",
            {"type": "message_delta", "delta": stop, "usage": {"output_tokens": output_tokens}},
        ),
        _event("message_stop", {"type": "message_stop"}),
    ]


def handler(mock: MockAnthropic) -> Any:
    async def messages(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        mock.requests.append(body)
        text = user_text(body)
        model = str(body.get("model", "claude-mock"))
        reply = f"echo: {text}"
        if not body.get("stream"):  # the agent's side questions (a title, a quota check)
            return web.json_response(
                {
                    "id": "msg_mock",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": reply}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 12, "output_tokens": 3},
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for part in _opening(model):
            await response.write(part)
        if "[hold]" in text:
            await response.write(_delta("working"))
            mock.holding.set()
            try:
                await asyncio.wait_for(mock.released.wait(), HOLD)
            finally:
                mock.holding.clear()
            return response
        thirds = len(reply) // 3
        for part in (reply[:thirds], reply[thirds : 2 * thirds], reply[2 * thirds :]):
            await response.write(_delta(part))
        for part in _closing(3):
            await response.write(part)
        return response

    return messages


@asynccontextmanager
async def serve() -> AsyncIterator[MockAnthropic]:
    """The API on an ephemeral 127.0.0.1 port; ``mock.url`` is its base URL."""
    mock = MockAnthropic()
    app = web.Application()
    app.router.add_post("/v1/messages", handler(mock))

    async def release(app: web.Application) -> None:  # before the server waits for handlers
        mock.released.set()

    app.on_shutdown.append(release)
    async with serve_app(app) as mock.url:
        yield mock
