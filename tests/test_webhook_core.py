"""``POST /v1/messages``'s core, called directly: the body as sent and the headers in, the
answer out, no HTTP request on the way (the aiohttp route is a thin adapter around it)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from multidict import CIMultiDict
from pydantic import SecretStr

from channels.endpoint import Answer
from channels.webhook.channel import WebhookChannel
from channels.webhook.messages import Messages

TOKEN = "core-token"
JSON = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def messages(gateway_server) -> AsyncIterator[Messages]:
    async with gateway_server(webhook_token=SecretStr(TOKEN)) as server:
        yield next(c for c in server.channels if isinstance(c, WebhookChannel)).messages


async def answer(messages: Messages, body: str, **headers: str) -> Answer:
    return await messages.answer(body.encode(), CIMultiDict({**JSON, **headers}))


def error(answered: Answer) -> tuple[int, str, str]:
    found = answered.json()["error"]
    return answered.status, found["code"], found["message"]


async def test_the_core_refuses_a_wrong_token_another_media_type_and_malformed_bodies(
    messages: Messages,
) -> None:
    good = json.dumps({"conversation": "c1", "user": "u1", "text": "/echo hi"})
    assert error(await answer(messages, good, Authorization="Bearer wrong")) == (
        401,
        "unauthorized",
        "missing or wrong Authorization: Bearer token",
    )
    refused = await answer(messages, good, **{"Content-Type": "text/plain"})
    assert refused.status == 415
    assert "application/json" in error(refused)[2]
    status, code, message = error(await answer(messages, '{"conversation": '))
    assert (status, code) == (400, "malformed_json")
    assert message.startswith("request body is not valid JSON")
    assert error(await answer(messages, '{"conversation": "c1", "text": "hi"}')) == (
        400,
        "invalid_request",
        "user: Field required",
    )
    lone = '{"conversation": "c1", "user": "u1", "text": "\\ud800"}'
    assert error(await answer(messages, lone))[:2] == (400, "invalid_text")
    assert error(await answer(messages, good, **{"Idempotency-Key": "k\x01"})) == (
        400,
        "invalid_header",
        "Idempotency-Key must be printable ASCII",
    )


async def test_the_core_runs_a_message_and_replays_it_under_its_key(messages: Messages) -> None:
    body = json.dumps({"conversation": "c1", "user": "u1", "text": "/echo hello"})
    first = await answer(messages, body, **{"Idempotency-Key": "k1"})
    again = await answer(messages, body, **{"Idempotency-Key": "k1"})
    other = json.dumps({"conversation": "c1", "user": "u1", "text": "/echo bye"})
    mismatch = await answer(messages, other, **{"Idempotency-Key": "k1"})
    assert first.status == 200
    assert first.headers["Content-Type"] == "application/json; charset=utf-8"
    assert first.json()["reply"] == {"text": "hello", "category": None, "stop_reason": "end_turn"}
    assert first.json()["classification"] == {
        "kind": "supported",
        "command": "echo",
        "args": "hello",
    }
    assert (again.status, again.json()) == (200, first.json())
    assert again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert error(mismatch)[:2] == (422, "idempotency_mismatch")
