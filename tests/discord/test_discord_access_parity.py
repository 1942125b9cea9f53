"""The access policy's parity cases (tests/parity/access.jsonl) through Discord, with hikari's
interactions against the fake Discord: the umbrella command in a channel of a listed server,
and in direct messages. Each reply the gateway gives is the case's; a refusal and a gateway
command's answer are shown to the sender alone (ephemeral); an input dropped in silence
leaves nothing, its "thinking" response removed.
"""

from __future__ import annotations

from typing import Any

import pytest

from channels.discord.commands import PLAIN, TEXT
from tests.access.parity import play, runtime, senders, settings
from tests.conftest import ServerFactory
from tests.parity_check import watch

from .fake import Message, fake_discord
from .harness import discord_gateway
from .interactions import GUILD, command, direct

OWNER = "4000"
STRING = 3


def member(index: int) -> str:
    return str(5000 + index)


async def test_the_access_cases_through_discord(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, users = runtime(), senders(OWNER, member)
    allowed = settings("discord", OWNER, GUILD, users)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, agent, **allowed) as h:

        async def send(case: dict[str, Any], user: str, text: str) -> list[Message]:
            """``text`` typed into the umbrella: ``/agent command:...`` or ``text:...``."""
            option = (TEXT, STRING, text[1:]) if text.startswith("/") else (PLAIN, STRING, text)
            made = command("agent", option, user_id=user)
            sent = direct(made, user) if case["where"] == "direct" else made
            status, _ = await h.interact(sent)
            assert status == 200
            return await h.replies(sent["token"])

        played = await play(watch(monkeypatch, h.server.gateway, "discord"), agent, users, send)
    for case, inputs in played:
        for _, outcome, reply, messages in inputs:
            if reply is None:
                assert messages == [], case["name"]
                continue
            [message] = messages
            assert message.content == reply["text"], case["name"]
            private = reply["category"] is not None or outcome.classification.source == "gateway"
            assert message.ephemeral == private, case["name"]
