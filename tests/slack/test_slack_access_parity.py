"""The access policy's parity cases (tests/parity/access.jsonl) through Slack, with slack-bolt
against the fake Slack: commands as the umbrella in a listed channel, plain text as direct
messages. Each reply the gateway gives is the case's; a refused command is shown to its
sender alone (ephemeral), the rest as messages, a failure of plain text with the warning
sign.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from channels.slack.mrkdwn import to_mrkdwn
from channels.slack.sink import WARNING
from tests.access.parity import play, runtime, senders, settings
from tests.conftest import ServerFactory
from tests.parity_check import watch
from tests.slack.slack_fake import WAIT, Message, direct_message, fake_slack, mention
from tests.slack.slack_harness import shown, slack_gateway

OWNER = "UOWNER"
CHANNEL = "C1"
Shown = tuple[list[Message], list[dict[str, Any]]]  # posted in the conversation, to the sender


def member(index: int) -> str:
    return f"UM{index}"


async def test_the_access_cases_through_slack(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, users = runtime(), senders(OWNER, member)
    allowed = settings("slack", OWNER, CHANNEL, users)
    stamps = (f"{n}.1" for n in itertools.count(1))
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, agent, **allowed) as h:

        async def send(case: dict[str, Any], user: str, text: str) -> Shown:
            ts = next(stamps)
            conversation = f"D{user}" if case["where"] == "direct" else CHANNEL
            before = len(fake.messages(conversation))
            if case["where"] == "direct":
                await h.slack.event(direct_message(text, channel=conversation, ts=ts, user=user))
            elif text.startswith("/"):
                url = fake.response_url(ts)
                await h.slack.command(
                    "/agent", text[1:], channel=CHANNEL, user=user, response_url=url
                )
            else:
                await h.slack.event(mention(text, channel=CHANNEL, ts=ts, user=user))
            await h.channel.drain(WAIT)
            return fake.messages(conversation)[before:], fake.responses_to(ts)

        played = await play(watch(monkeypatch, h.server.gateway, "slack"), agent, users, send)
    for case, inputs in played:
        for text, _, reply, (posted, private) in inputs:
            seen_by(case, text, reply, posted, private)


def seen_by(
    case: dict[str, Any],
    text: str,
    reply: dict[str, Any] | None,
    posted: list[Message],
    private: list[dict[str, Any]],
) -> None:
    """What Slack showed for ``text``: ``posted`` in its conversation, ``private`` to its
    sender.
    """
    name, command = case["name"], text.startswith("/") and case["where"] == "group"
    if reply is None:
        assert (posted, private) == ([], []), name
    elif command and reply["category"] is not None:
        assert posted == [], name
        assert private == [{"response_type": "ephemeral", "text": to_mrkdwn(reply["text"])}], name
    elif reply["category"] is not None and not text.startswith("/"):
        assert private == [], name
        assert [m.text for m in posted] == [WARNING + to_mrkdwn(reply["text"])], name
    else:
        assert private == [], name
        [message] = posted
        assert shown(message, reply["text"]), (name, message.text)
