"""The parity corpus through plain Discord messages: every case as a direct message, and as
a mention where Discord's text can carry it; the same classification, forwarded
composer_input and reply text as the webhook channel gives for the same input, in the same
run. A plain message has none of a slash command's limits: the text arrives as typed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import load_parity, parity_runtime
from tests.parity_check import same_as_webhook, watch, webhook

from .interactions import USER
from .plain_harness import mentioning, message_create, plain_gateway

HEADER, CASES = load_parity()
LEADING_SPACE = "the white space after a mention is taken off with it"


def params() -> list[Any]:
    out = []
    for index, case in enumerate(CASES):
        text = case["text"]
        out.append(pytest.param(case, "dm", id=f"{index:02d}-dm"))
        marks = [pytest.mark.skip(LEADING_SPACE)] if text != text.lstrip() else []
        out.append(pytest.param(case, "mention", id=f"{index:02d}-mention", marks=marks))
    return out


@pytest.mark.parametrize(("case", "form"), params())
async def test_parity_case_through_discord_messages(gateway_server, monkeypatch, case, form):
    text = case["text"]
    interactive = HEADER["interactive_only"]
    # An owner's /help lists /new in a server channel.
    owner = {"discord_owners": [USER]}
    async with plain_gateway(
        gateway_server, parity_runtime(), interactive_only=interactive, **owner
    ) as p:
        seen = watch(monkeypatch, p.h.server.gateway, "discord")
        web = await webhook(p.h.discord.session, p.h.server.url, text)
        replies = await p.say(message_create(text) if form == "dm" else mentioning(text))

    same_as_webhook(seen, web, case)
    # What the user sees: the same text, in the channel.
    [reply] = replies
    assert reply.content == web["reply"]["text"]
