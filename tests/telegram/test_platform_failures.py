"""The Bot API failing as real servers and networks do (5xx in JSON or HTML, connections
dropped or cut off, calls that time out), through aiogram against the fake: the user gets
the reply once, and a Bot API that stays down costs one logged error, not a crash.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from channels.telegram import delivery
from contract import Command
from gateway.backoff import Backoff
from gateway.events import MessageDelta, MessageEnd, PermissionOption, PermissionRequired
from tests.faults import trouble

from .fake_bot_api import WAIT, FakeBotAPI, FaultKind
from .helpers import GROUP, PRIVATE, Scripted, Start, callback_update, message_update

GO = Command(name="go", description="Go")


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery, "RETRY", Backoff(base=0.01))


# (kind, status) of each failed attempt; "json" is the Bot API's own error body.
FAILURES = {
    "json-502": [("json", 502), ("json", 502)],
    "json-500-restart": [("json", 500)],
    "html-502": [("page", 502), ("page", 502)],
    "html-200": [("page", 200)],
    "dropped": [("drop", 0)] * 3,
    "mixed": [("page", 503), ("drop", 0), ("json", 500)],
}


@pytest.mark.parametrize("failures", FAILURES.values(), ids=FAILURES.keys())
async def test_the_reply_arrives_once_after_transient_failures(
    telegram: Start,
    fake: FakeBotAPI,
    caplog: pytest.LogCaptureFixture,
    failures: list[tuple[FaultKind, int]],
) -> None:
    for kind, status in failures:
        if kind == "json":
            fake.inject("sendMessage", status, "Internal Server Error: restart")
        else:
            fake.fail("sendMessage", kind, code=status)
    with caplog.at_level(logging.INFO):
        async with telegram() as served:
            await served.deliver(message_update(PRIVATE, "/echo arrives"))
            assert fake.texts(PRIVATE) == ["arrives"]
            assert len(fake.calls_to("sendMessage")) == len(failures) + 1
    assert trouble(caplog.records) == []  # retries are INFO: the user got the reply


async def test_a_call_that_times_out_is_made_again(telegram: Start, fake: FakeBotAPI) -> None:
    fake.fail("sendMessage", "hang")
    async with telegram(platform_timeout=0.5) as served:
        await served.deliver(message_update(GROUP, "/echo late"))
        assert fake.texts(GROUP) == ["late"]
        assert len(fake.calls_to("sendMessage")) == 2


async def test_an_answer_cut_off_after_the_send_went_through_repeats_the_message(
    telegram: Start, fake: FakeBotAPI
) -> None:
    """The documented trade-off (docs/internals/decisions.md): Telegram has no idempotency key, so a
    send whose answer was lost is sent again; a repeated message beats a missing one.
    """
    fake.fail("sendMessage", "cut")
    async with telegram() as served:
        await served.deliver(message_update(PRIVATE, "/echo twice"))
        assert fake.texts(PRIVATE) == ["twice", "twice"]


async def test_a_bot_api_that_stays_down_costs_one_logged_error(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    attempts = delivery.RETRY.attempts
    fake.fail("sendMessage", "page", code=502, times=attempts)
    with caplog.at_level(logging.INFO):
        async with telegram() as served:
            await served.deliver(message_update(PRIVATE, "/echo lost"))
            assert len(fake.calls_to("sendMessage")) == attempts
            assert fake.texts(PRIVATE) == []
            [error] = trouble(caplog.records)
            assert error.levelno == logging.ERROR and error.exc_info is None
            assert "not delivered" in error.getMessage()
            # Telegram is back: the next message is answered as usual.
            await served.deliver(message_update(PRIVATE, "/echo back"))
            assert fake.texts(PRIVATE) == ["back"]


async def test_a_long_reply_stops_at_the_first_chunk_that_cannot_be_delivered(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    attempts = delivery.RETRY.attempts
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        fake.fail("sendMessage", "drop", times=attempts, when=lambda p: "second" in p["text"])
        turn.emit(MessageDelta("first " * 500 + "\n\n" + "second " * 500), MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        texts = fake.texts(PRIVATE)
        assert len(texts) == 1 and texts[0].startswith("first")


async def test_the_permission_prompt_outlasts_an_html_error_page(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        fake.fail("sendMessage", "page", code=502)
        options = (PermissionOption("ok", "Allow", "allow_once"),)
        turn.emit(PermissionRequired("r1", "Run ls?", options))
        await fake.wait(lambda: any("Run ls?" in t for t in fake.texts(PRIVATE)))
        assert len(fake.texts(PRIVATE)) == 1
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)


async def test_a_button_press_reaches_the_runtime_when_telegram_cannot_echo_it(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        await served.post(message_update(GROUP, "/go"))
        turn = await runtime.next_turn()
        turn.emit(PermissionRequired("r1", "Run ls?", (PermissionOption("ok", "Allow"),)))
        await fake.wait(lambda: len(fake.messages(GROUP)) == 1)
        [prompt] = fake.messages(GROUP)
        data = prompt.reply_markup["inline_keyboard"][0][0]["callback_data"]
        fake.fail("answerCallbackQuery", "page", code=502)
        with caplog.at_level(logging.INFO):
            await served.post(callback_update(GROUP, prompt.message_id, data))
            assert await asyncio.wait_for(turn.answers["r1"], WAIT) == "ok"
            turn.emit(MessageEnd())
            await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        [warning] = trouble(caplog.records)
        assert warning.levelno == logging.WARNING and warning.exc_info is None


async def test_a_preview_answered_with_html_is_dropped_and_the_reply_still_arrives(
    telegram: Start, fake: FakeBotAPI, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=0.05) as served:
        await served.post(message_update(GROUP, "/go"))
        turn = await runtime.next_turn()
        fake.fail("sendMessage", "page", code=502)  # the placeholder: not retried
        turn.emit(MessageDelta("partial"))
        await fake.wait(lambda: len(fake.calls_to("sendMessage")) == 1)
        turn.emit(MessageDelta(" and whole"), MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(GROUP) == ["partial and whole"]
    assert not [r for r in caplog.records if r.exc_info]
