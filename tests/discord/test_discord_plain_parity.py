"""The parity corpus through plain Discord messages: every case as a direct message, and as
a mention where Discord's text can carry it; the same classification, forwarded
composer_input and reply text as the webhook channel gives for the same input, in the same
run. A plain message has none of a slash command's limits: the text arrives as typed.
"""

from __future__ import annotations

from typing import Any

import pytest

from channels.webhook.wire import classification_body, forwarded_body
from gateway.inbound import InboundMessage, Outcome
from tests.conftest import load_parity, parity_runtime

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
    async with plain_gateway(gateway_server, parity_runtime(), interactive_only=interactive) as p:
        seen: list[tuple[InboundMessage, Outcome]] = []
        handle = p.h.server.gateway.handle

        async def spy(message: InboundMessage, sink: Any = None, entry: Any = None) -> Outcome:
            outcome = await handle(message, sink, entry)
            if message.channel == "discord":
                seen.append((message, outcome))
            return outcome

        monkeypatch.setattr(p.h.server.gateway, "handle", spy)
        async with p.h.discord.session.post(
            p.h.server.url + "/v1/messages",
            json={"conversation": "parity", "user": "U1", "text": text},
        ) as resp:
            assert resp.status == 200
            web = await resp.json()
        replies = await p.say(message_create(text) if form == "dm" else mentioning(text))

    [(message, outcome)] = seen
    assert message.text == text  # the contract saw exactly what the user typed
    assert classification_body(outcome.classification) == web["classification"]
    assert forwarded_body(outcome.forwarded) == web["forwarded"]
    expect = case["expect"]
    assert outcome.classification.kind == expect["kind"]
    if "command" in expect:
        assert outcome.classification.command == expect["command"]
    if "message" in expect:
        assert web["reply"]["text"] == expect["message"]
    [reply] = replies
    assert reply.content == web["reply"]["text"]
