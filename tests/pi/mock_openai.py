"""A local OpenAI-compatible chat completions endpoint (streaming) that pi uses as its model.

It answers by the last user message, so that tests choose the model's behaviour in their prompt:
- containing ``[tool]``: first a ``read`` tool call on ``notes.txt``, then (after the tool result)
  the text ``tool said: <result>``;
- containing ``[hold]``: one chunk, then the stream stays open until the client goes away
  (the test cancels);
- containing ``[fail]``: HTTP 400 with an error message;
- anything else: ``echo: <message>`` streamed in a few chunks.
Every request body is recorded, so tests can check what pi sent to its model.
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

MODEL = "mock-model"


@dataclass
class MockModel:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    holding: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def user_texts(self) -> list[str]:
        """The text of the last user message of every request, in order."""
        return [_last_user_text(body) for body in self.requests]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, dict))


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            return _text(message.get("content"))
    return ""


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n".encode()


async def _stream(request: web.Request, parts: list[bytes]) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for part in parts:
        await response.write(part)
    return response


def handler(model: MockModel) -> Any:
    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        model.requests.append(body)
        messages = body.get("messages", [])
        last = messages[-1] if messages else {}
        text = _last_user_text(body)
        if last.get("role") == "tool":
            result = _text(last.get("content")).strip()
            return await _finish(request, [_chunk({"content": f"tool said: {result}"})])
        if "[fail]" in text:
            error = {"message": "model refused: bad request", "type": "invalid_request_error"}
            return web.json_response({"error": error}, status=400)
        if "[tool]" in text:
            call = {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": json.dumps({"path": "notes.txt"})},
            }
            return await _stream(
                request,
                [
                    _chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
                    _chunk({}, "tool_calls"),
                    b"data: [DONE]\n\n",
                ],
            )
        if "[hold]" in text:
            first = _chunk({"role": "assistant", "content": "thinking"})
            response = await _stream(request, [first])
            model.holding.set()
            try:
                await asyncio.wait_for(model.released.wait(), 30)
            finally:
                model.holding.clear()
            return response
        reply = f"echo: {text}"
        if "[usage]" in text:  # what the provider counted, after the text (include_usage)
            tokens = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
            usage = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0,
                     "model": MODEL, "choices": [], "usage": tokens}  # fmt: skip
            parts = [_chunk({"role": "assistant", "content": reply}), _chunk({}, "stop")]
            done = f"data: {json.dumps(usage)}\n\n".encode(), b"data: [DONE]\n\n"
            return await _stream(request, [*parts, *done])
        thirds = [
            reply[: len(reply) // 3],
            reply[len(reply) // 3 : 2 * len(reply) // 3],
            reply[2 * len(reply) // 3 :],
        ]
        return await _finish(request, [_chunk({"role": "assistant", "content": p}) for p in thirds])

    return completions


async def _finish(request: web.Request, chunks: list[bytes]) -> web.StreamResponse:
    return await _stream(request, [*chunks, _chunk({}, "stop"), b"data: [DONE]\n\n"])


@asynccontextmanager
async def serve() -> AsyncIterator[MockModel]:
    """The endpoint on an ephemeral 127.0.0.1 port; ``model.url`` is its OpenAI base URL."""
    model = MockModel()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler(model))
    async with serve_app(app) as url:
        model.url = f"{url}/v1"
        try:
            yield model
        finally:
            model.released.set()
