"""One parity case through a channel, next to the webhook in the same run: the channel's
input ran once, the contract saw exactly the text typed, and classified and forwarded it as
the webhook did for the same text, as the case expects.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import aiohttp
import pytest

from channels.webhook.wire import classification_body, forwarded_body
from gateway.core import Gateway
from gateway.inbound import InboundMessage, Outcome

Seen = list[tuple[InboundMessage, Outcome]]


def watch(monkeypatch: pytest.MonkeyPatch, gateway: Gateway, channel: str) -> Seen:
    """The inputs of ``channel`` the gateway handles from now on, with their outcomes."""
    seen: Seen = []
    handle = gateway.handle

    async def spy(
        given: InboundMessage | Awaitable[InboundMessage], sink: Any = None, entry: Any = None
    ) -> Outcome:
        # Slack and Discord hand over what makes the message (its files fetched).
        message = given if isinstance(given, InboundMessage) else await given
        outcome = await handle(message, sink, entry)
        if message.channel == channel:
            seen.append((message, outcome))
        return outcome

    monkeypatch.setattr(gateway, "handle", spy)
    return seen


async def webhook(session: aiohttp.ClientSession, url: str, text: str) -> dict[str, Any]:
    """What ``POST /v1/messages`` answers for ``text`` on the server at ``url``."""
    body = {"conversation": "parity", "user": "U1", "text": text}
    async with session.post(url + "/v1/messages", json=body) as resp:
        assert resp.status == 200
        answer: dict[str, Any] = await resp.json()
        return answer


def same_as_webhook(seen: Seen, web: dict[str, Any], case: dict[str, Any]) -> Outcome:
    """Check the channel's one input against the webhook's answer and the case; its outcome."""
    [(message, outcome)] = seen
    assert message.text == case["text"]  # the contract saw exactly what the user typed
    assert classification_body(outcome.classification) == web["classification"]
    assert forwarded_body(outcome.forwarded) == web["forwarded"]
    expect = case["expect"]
    assert outcome.classification.kind == expect["kind"]
    if "command" in expect:
        assert outcome.classification.command == expect["command"]
    if "args" in expect:
        assert outcome.classification.args == expect["args"]
    if "nodes" in expect:
        assert web["forwarded"]["payload"]["nodes"] == expect["nodes"]
    if "message" in expect:
        assert web["reply"]["text"] == expect["message"]
    return outcome
