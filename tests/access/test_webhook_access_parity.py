"""The access policy's parity cases (tests/parity/access.jsonl) through the webhook: with
``webhook_owners`` set, the ``user`` field decides who may run owner-only commands, as on
the chat channels; every conversation may be shared, so the group cases are its cases. The
per-sender limits and direct messages are the chat channels' alone.
"""

from __future__ import annotations

import aiohttp
import pytest

from tests.access.parity import CASES, HEADER, check, limited, runtime
from tests.conftest import ServerFactory
from tests.parity_check import watch

OWNER = "owner"
PLAYED = [c for c in CASES if c["where"] == "group" and not limited(c)]


async def test_the_access_cases_through_the_webhook(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert PLAYED, "no case of the corpus applies to the webhook"
    agent = runtime()
    settings = {"webhook_owners": [OWNER], "webhook_owner_commands": HEADER["owner_commands"]}
    async with gateway_server(agent, **settings) as server, aiohttp.ClientSession() as http:
        seen = watch(monkeypatch, server.gateway, "webhook")
        for index, case in enumerate(PLAYED):
            user = OWNER if case["sender"] == "owner" else f"member-{index}"
            inputs, ran, answers = len(seen), len(agent.texts), []
            for text in case["texts"]:
                body = {"conversation": "shared", "user": user, "text": text}
                async with http.post(server.url + "/v1/messages", json=body) as resp:
                    assert resp.status == 200
                    answers.append((await resp.json())["reply"])
            replies = check(case, seen[inputs:], agent.texts[ran:])
            for reply, answer in zip(replies, answers, strict=True):
                assert reply is not None
                assert {"category": answer["category"], "text": answer["text"]} == reply
