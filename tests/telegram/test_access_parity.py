"""The access policy's parity cases (tests/parity/access.jsonl) through Telegram, with aiogram
against the fake Bot API: in a listed group and in private chats, each reply the gateway
gives is the case's and is what the chat shows (Telegram has no message for one member
only: a refusal in a group is the group's to see; a failure of plain text gets the warning
sign).
"""

from __future__ import annotations

from typing import Any

import pytest

from channels.activity import FAILURE_PREFIX
from channels.telegram.render import render
from tests.access.parity import play, runtime, senders, settings
from tests.parity_check import watch

from .fake_bot_api import FakeBotAPI
from .helpers import GROUP, Start, message_update

OWNER = "4000"


async def test_the_access_cases_through_telegram(
    telegram: Start, fake: FakeBotAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, users = runtime(), senders(OWNER, lambda index: str(5000 + index))
    async with telegram(agent, **settings("telegram", OWNER, str(GROUP), users)) as served:

        async def send(case: dict[str, Any], user: str, text: str) -> list[str]:
            chat = GROUP if case["where"] == "group" else int(user)  # a private chat's: the user's
            before = len(fake.messages(chat))
            await served.deliver(message_update(chat, text, user_id=int(user)))
            return fake.texts(chat)[before:]

        played = await play(
            watch(monkeypatch, served.server.gateway, "telegram"), agent, users, send
        )
    for case, inputs in played:
        for text, _, reply, texts in inputs:
            expected = [] if reply is None else [c.plain for c in render(warned(text, reply))]
            assert texts == expected, case["name"]


def warned(text: str, reply: dict[str, Any]) -> str:
    """The reply as Telegram words it: a failure of plain text gets the warning sign."""
    failed = reply["category"] is not None and not text.startswith("/")
    return (FAILURE_PREFIX if failed else "") + reply["text"]
