"""The webhook: the secret, bad input, redelivery, answering fast, bounded work, shutdown."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from aiogram.exceptions import TelegramUnauthorizedError
from pydantic import SecretStr

from channels.telegram import channel as telegram_channel
from contract import Command
from gateway.events import MessageDelta, MessageEnd
from gateway.state import Entry, SqliteStore
from slashgate.server import StartError, running
from tests.conftest import make_settings

from .fake_bot_api import WAIT, FakeBotAPI
from .helpers import GROUP, PRIVATE, SECRET, Scripted, Start, message_update

GO = Command(name="go", description="Go")


async def test_a_wrong_or_missing_secret_is_401_and_nothing_runs(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        update = message_update(PRIVATE, "hello")
        for secret in (None, "", "wrong", SECRET + "x", SECRET[:-1]):
            status, body = await served.post(update, secret=secret)
            assert status == 401
            assert body["description"] == "missing or wrong X-Telegram-Bot-Api-Secret-Token"
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert runtime.turns.empty() and runtime.keys == []
        assert not fake.calls_to("sendMessage") and not fake.calls_to("sendChatAction")
        # Not even remembered as delivered: the genuine delivery runs.
        status, _ = await served.post(update)
        assert status == 200
        turn = await runtime.next_turn()
        assert turn.turn.message.payload.source == "hello"
        turn.emit(MessageDelta("hi"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["hi"])


async def test_bad_input_is_a_4xx_with_a_message(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram(webhook_max_body=2000) as served:
        assert await served.post("{not json") == (
            400,
            {"ok": False, "description": "request body is not JSON"},
        )
        for body in ('{"message": {}}', "[1, 2]", '{"update_id": "x"}'):
            status, answer = await served.post(body)
            assert (status, answer["description"]) == (400, "request body is not an update")
        status, answer = await served.post('{"update_id": 1, "x": "' + "a" * 3000 + '"}')
        assert (status, answer["description"]) == (413, "request body over the limit of 2000 bytes")
        assert await served.post(message_update(PRIVATE, "/echo fine")) == (200, {"ok": True})
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(PRIVATE) == ["fine"]


async def test_a_redelivered_update_runs_once(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram() as served:
        update = message_update(PRIVATE, "/echo once")
        await served.deliver(update)
        await served.deliver(update)
        again = message_update(PRIVATE, "/echo once")  # the same text, a new update: runs
        await served.deliver(again)
        assert fake.texts(PRIVATE) == ["once", "once"]


async def test_the_webhook_answers_before_the_turn_ends(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        status, _ = await served.post(message_update(PRIVATE, "/go"))
        assert status == 200
        turn = await runtime.next_turn()  # still running: nothing sent yet
        assert fake.texts(PRIVATE) == []
        turn.emit(MessageDelta("done"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["done"])


async def test_past_the_bound_the_webhook_says_retry_and_loses_nothing(
    telegram: Start, fake: FakeBotAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(telegram_channel, "MAX_IN_FLIGHT", 1)
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        assert (await served.post(message_update(PRIVATE, "/go first")))[0] == 200
        first = await runtime.next_turn()
        second = message_update(PRIVATE + 1, "/go second")
        async with served.http.post(
            f"{served.server.url}/telegram/webhook",
            json=second,
            headers={"X-Telegram-Bot-Api-Secret-Token": SECRET},
        ) as resp:
            assert resp.status == 503 and resp.headers["Retry-After"] == "1"
        first.emit(MessageEnd())
        await fake.wait(lambda: len(fake.texts(PRIVATE)) == 1)
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        # Telegram delivers it again; it was not marked as seen, so it runs now.
        assert (await served.post(second))[0] == 200
        turn = await runtime.next_turn()
        assert turn.turn.message.payload.source == "/go second"
        turn.emit(MessageDelta("ok"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE + 1) == ["ok"])


async def test_stopping_finishes_the_updates_in_flight(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        assert (await served.post(message_update(PRIVATE, "/go")))[0] == 200
        turn = await runtime.next_turn()
        stopping = asyncio.create_task(served.channel.stop())
        # While stopping, a new delivery is handed back to Telegram for later.
        assert (await served.post(message_update(PRIVATE, "/go later")))[0] == 503
        assert not stopping.done()
        turn.emit(MessageDelta("finished"), MessageEnd())
        await asyncio.wait_for(stopping, WAIT)
        assert fake.texts(PRIVATE) == ["finished"]


async def test_an_update_still_running_past_the_grace_is_cancelled_and_logged(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, cancel_grace=0.2, telegram_edit_interval=0.05) as served:
        update = message_update(GROUP, "/go")
        await served.post(update)
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("partial"))  # typing and the preview are going on
        await fake.wait(lambda: fake.texts(GROUP) == ["partial"])
        # The turn never ends: the stop waits the grace, not the run timeout, then cancels.
        await asyncio.wait_for(served.channel.stop(), WAIT)
        assert f"update {update['update_id']} cancelled at shutdown" in caplog.text
        # Nothing of that update goes on: no typing, no preview loop outlives the server.
        coroutines = {getattr(t.get_coro(), "__qualname__", "") for t in asyncio.all_tasks()}
        assert not coroutines & {"TelegramSink._keep_typing", "TelegramSink._stream"}


async def test_once_the_gateway_is_closing_updates_are_handed_back(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        await served.server.gateway.stop_runs()  # the first step of the shutdown
        # Telegram delivers it again to the next gateway, instead of a "shutting down" reply.
        assert (await served.post(message_update(PRIVATE, "/echo later")))[0] == 503
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(PRIVATE) == []


async def test_the_webhook_is_registered_with_its_secret(telegram: Start, fake: FakeBotAPI) -> None:
    url = "https://gateway.example/telegram/webhook"
    async with telegram(telegram_webhook_url=url):
        assert fake.webhook is not None
        assert fake.webhook["url"] == url
        assert fake.webhook["secret_token"] == SECRET
        assert set(fake.webhook["allowed_updates"]) == {
            "message",
            "edited_message",
            "callback_query",
        }


def test_webhook_mode_without_a_secret_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from slashgate.cli import main

    monkeypatch.setenv("SLASHGATE_TELEGRAM_TOKEN", "123:abc")
    monkeypatch.delenv("SLASHGATE_TELEGRAM_SECRET", raising=False)
    monkeypatch.delenv("SLASHGATE_TELEGRAM_MODE", raising=False)
    assert main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "bad configuration" in err and "SLASHGATE_TELEGRAM_SECRET" in err
    assert "Traceback" not in err


async def test_a_wrong_token_stops_the_start_without_showing_it(fake: FakeBotAPI) -> None:
    token = "999999:not-the-right-one"
    settings = make_settings(
        telegram_token=SecretStr(token),
        telegram_api_base=fake.url,
        telegram_secret=SecretStr(SECRET),
    )
    with pytest.raises(StartError) as failed:
        async with running(settings):
            pass
    assert isinstance(failed.value.__cause__, TelegramUnauthorizedError)
    assert str(failed.value) == "TelegramUnauthorizedError: Telegram server says - Unauthorized"


async def test_journaled_updates_run_at_the_next_start_text_or_older_dicts(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    """What the intake journals (the update's JSON text) and what older versions journaled
    (the update as a dict) both run when the gateway starts again.
    """
    state = tmp_path / "state.sqlite3"
    store = SqliteStore(state, 100)
    await store.open()
    journaled = {
        PRIVATE: json.dumps(message_update(PRIVATE, "/echo from text")),
        PRIVATE + 1: message_update(PRIVATE + 1, "/echo from a dict"),
    }
    for chat, update in journaled.items():
        body = {"update": update}
        entry = Entry(f"e{chat}", f"telegram:{chat}", "telegram", body, created=time.time() - 1)
        assert await store.append(entry, None, 60) is not None
    await store.close()
    async with telegram(store="sqlite", state_path=state):
        await fake.wait(
            lambda: (
                fake.texts(PRIVATE) == ["from text"] and fake.texts(PRIVATE + 1) == ["from a dict"]
            )
        )
