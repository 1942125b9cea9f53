"""The Telegram webhook's core, called directly: bytes and headers in, an answer out, no HTTP
request on the way (the aiohttp route is a thin adapter around it)."""

from __future__ import annotations

import json

from multidict import CIMultiDict

from channels.endpoint import Answer
from channels.telegram.webhook import SECRET_HEADER, Webhook
from contract import Command
from gateway.events import MessageDelta, MessageEnd

from .fake_bot_api import FakeBotAPI
from .helpers import PRIVATE, SECRET, Scripted, Start, message_update

GO = Command(name="go", description="Go")


async def answer(webhook: Webhook, body: str, secret: str | None = SECRET) -> Answer:
    headers = CIMultiDict({} if secret is None else {SECRET_HEADER: secret})
    return await webhook.answer(body.encode(), headers)


async def test_the_core_refuses_a_wrong_secret_and_a_malformed_body(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        webhook = served.channel.webhook
        update = json.dumps(message_update(PRIVATE, "hello"))
        wrong = await answer(webhook, update, secret="wrong")
        missing = await answer(webhook, update, secret=None)
        not_json = await answer(webhook, "{not json")
        not_update = await answer(webhook, '{"update_id": "x"}')
        surrogate = await answer(webhook, '{"update_id": 5, "message": "\\ud800"}')
    for refused in (wrong, missing):
        assert refused.status == 401
        assert refused.json() == {
            "ok": False,
            "description": "missing or wrong X-Telegram-Bot-Api-Secret-Token",
        }
    assert (not_json.status, not_json.json()["description"]) == (400, "request body is not JSON")
    assert (not_update.status, not_update.json()["description"]) == (
        400,
        "request body is not an update",
    )
    assert surrogate.status == 400
    assert runtime.keys == []


async def test_the_core_takes_an_update_and_its_reply_is_sent(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        update = json.dumps(message_update(PRIVATE, "hello"))
        taken = await answer(served.channel.webhook, update)
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("hi"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["hi"])
    assert (taken.status, taken.json()) == (200, {"ok": True})
    assert taken.headers["Content-Type"] == "application/json; charset=utf-8"
    assert turn.turn.message.payload.source == "hello"
