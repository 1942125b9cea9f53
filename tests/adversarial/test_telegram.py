"""Telegram (aiogram against the fake Bot API) under hostile input: texts of 4,096 characters
and captions of 1,024, as commands and as plain text, in every kind of hard text; lone
surrogates in an update; header bytes outside ASCII. Each gets its documented reply or a
clear 4xx, /healthz keeps answering, and the chat goes on.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.helpers import (
    PRIVATE,
    SECRET,
    Served,
    Start,
    entities,
    message_update,
)
from tests.telegram.test_attachments import PHOTO_SIZES, file_update, photo

from .common import BOUND, FLAVORS, fill, healthz_watch, raw_request

TEXT_LIMIT, CAPTION_LIMIT = 4096, 1024  # what a Telegram client lets a user send


def squeeze(text: str) -> str:
    """``text`` without its white space: where a long reply is cut, it may be dropped."""
    return "".join(text.split())


async def deliver(served: Served, update: dict[str, Any]) -> None:
    """Post the update; bounded, so that a hang fails the test instead of blocking it."""
    await asyncio.wait_for(served.deliver(update), BOUND)


async def next_works(served: Served, fake: FakeBotAPI) -> None:
    """The chat takes the next command as if nothing had happened."""
    await deliver(served, message_update(PRIVATE, "/echo next one"))
    assert fake.texts(PRIVATE)[-1] == "next one"


def check_replies(fake: FakeBotAPI, expected: str) -> None:
    texts = fake.texts(PRIVATE)
    assert texts, "nothing was sent"
    assert max(map(len, texts)) <= TEXT_LIMIT
    # Markdown replaces NUL with U+FFFD (CommonMark's rule): the one character that changes.
    assert squeeze(expected.replace("\x00", "\ufffd")) in squeeze("".join(texts))


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
@pytest.mark.parametrize("form", ["command", "plain"])
async def test_a_text_of_4096_characters(
    telegram: Start, fake: FakeBotAPI, flavor: str, form: str
) -> None:
    prefix = "/echo " if form == "command" else ""
    text = prefix + fill(flavor, TEXT_LIMIT - len(prefix))
    async with telegram() as served:
        async with healthz_watch(served.server.url):
            await deliver(served, message_update(PRIVATE, text))
        said = text.removeprefix(prefix).strip()
        check_replies(fake, said if form == "command" else f'You said: "{said}"')
        await next_works(served, fake)


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
async def test_a_caption_of_1024_characters(telegram: Start, fake: FakeBotAPI, flavor: str) -> None:
    caption = "/echo " + fill(flavor, CAPTION_LIMIT - len("/echo "))
    update = file_update(PRIVATE, caption, photo=photo(fake, *PHOTO_SIZES))
    update["message"]["caption_entities"] = entities(caption)
    async with telegram() as served:
        async with healthz_watch(served.server.url):
            await deliver(served, update)
        check_replies(fake, caption.removeprefix("/echo ").strip())
        await next_works(served, fake)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('"/echo \\ud800"', "message.text"),
        ('"hi \\udfff\\ud83d"', "message.text"),
        ('"\\udc00"', "message.text"),
    ],
)
async def test_lone_surrogates_in_an_update_are_a_400_naming_the_field(
    telegram: Start, fake: FakeBotAPI, text: str, field: str
) -> None:
    update = json.dumps(message_update(PRIVATE, "PLACEHOLDER")).replace('"PLACEHOLDER"', text)
    async with telegram() as served, healthz_watch(served.server.url):
        status, answer = await served.post(update)
        assert status == 400, answer
        assert answer["description"].startswith(f"{field}: not valid Unicode text")
        encoded = update.encode().replace(text.encode(), b'"/echo \xed\xa0\x80"')
        status, answer = await served.post(encoded)
        assert status == 400, answer
        assert answer["description"].startswith(f"{field}: not valid Unicode text")
        assert fake.texts(PRIVATE) == []
        await next_works(served, fake)


@pytest.mark.parametrize(
    "secret",
    [b"\xff\xfe", SECRET.encode() + b"\xff", "sécret".encode(), b""],
    ids=["bad-bytes", "bad-byte-after-the-secret", "utf8", "empty"],
)
async def test_a_secret_header_outside_ascii_is_a_401(
    telegram: Start, fake: FakeBotAPI, secret: bytes
) -> None:
    body = json.dumps(message_update(PRIVATE, "/echo hi")).encode()
    async with telegram() as served, healthz_watch(served.server.url):
        head = b"POST /telegram/webhook HTTP/1.1\r\nContent-Type: application/json\r\n"
        head += b"X-Telegram-Bot-Api-Secret-Token: " + secret
        status, answer = await raw_request(served.server.url, head, body)
        assert status == 401, answer
        assert b"X-Telegram-Bot-Api-Secret-Token" in answer
        assert fake.texts(PRIVATE) == []
        await next_works(served, fake)
