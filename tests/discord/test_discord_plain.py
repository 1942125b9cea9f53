"""Plain messages over Discord's Gateway connection, through hikari's GatewayBot against the
fake Gateway: a DM and a mention get the webhook's answer for the same text, posted as a
reply in their channel; what is not for the bot is left alone; a message runs once.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from contract import Command
from tests.slack.slack_harness import Recorder

from .fake import BOT_USER
from .interactions import GUILD, USER, user
from .plain_harness import DM, ROOM, mentioning, message_create, plain_gateway

DEPLOY = (Command(name="deploy"),)
GUILD_MEMBER_JOIN = 7  # a message type Discord posts itself


async def webhook(url: str, text: str, conversation: str = "w") -> dict[str, Any]:
    """The webhook channel's answer to ``text``."""
    async with aiohttp.ClientSession() as session:
        body = {"conversation": conversation, "user": "U1", "text": text}
        async with session.post(url + "/v1/messages", json=body) as response:
            assert response.status == 200
            answer: dict[str, Any] = await response.json()
            return answer


async def test_a_dm_gets_the_webhooks_answer_as_a_reply(gateway_server):
    async with plain_gateway(gateway_server) as p:
        web = await webhook(p.h.server.url, "/echo hi")
        data = message_create("/echo hi")
        [reply] = await p.say(data)
        identified = p.socket.identified
    assert reply.content == web["reply"]["text"]
    assert p.socket.compression == ["zlib-stream"]  # hikari's default transport, as in use
    assert [i["intents"] for i in identified] == [(1 << 9) | (1 << 12)]  # no privileged intent
    [post] = p.h.fake.writes("POST", f"/channels/{DM}/messages")
    assert post.body["message_reference"]["message_id"] == data["id"]
    assert post.body["allowed_mentions"] == {"parse": []}  # the reply pings nobody


async def test_a_mention_is_answered_without_the_mention_in_the_input(gateway_server):
    recorder = Recorder(DEPLOY)
    # An owner's /help lists /new in a server channel, as the webhook's does.
    async with plain_gateway(gateway_server, recorder.runtime, discord_owners=[USER]) as p:
        web = await webhook(p.h.server.url, "/help")
        [help_text] = await p.say(mentioning("/help"))
        await p.say(mentioning("deploy to prod, please"))
        room = p.h.fake.posted[ROOM]
    assert help_text.content == web["reply"]["text"]
    assert recorder.sources == ["deploy to prod, please"]
    assert room[-1].content == "got: deploy to prod, please"


async def test_what_is_not_for_the_bot_is_left_alone(gateway_server):
    recorder = Recorder(DEPLOY)
    ignored = [
        message_create("/deploy from a bot", author={**user("999"), "bot": True}),
        message_create("/deploy from itself", author=BOT_USER),
        {**message_create("/deploy from a webhook"), "webhook_id": "31"},
        message_create("/deploy without a mention", channel=ROOM, guild=GUILD),
        {**mentioning("/deploy"), "type": GUILD_MEMBER_JOIN},
        mentioning(""),  # a bare mention says nothing
    ]
    async with plain_gateway(gateway_server, recorder.runtime) as p:
        for data in ignored:
            await p.send(data)
        # Dispatched in order: once the next one is answered, those before were read.
        await p.say(message_create("/deploy for the bot"))
        taken = dict(p.taken)
        posted = {channel: len(messages) for channel, messages in p.h.fake.posted.items()}
    assert recorder.sources == ["/deploy for the bot"]
    assert list(taken.values()) == [[True]]
    assert posted == {DM: 1}


async def test_a_message_dispatched_again_runs_once(gateway_server):
    recorder = Recorder(DEPLOY)
    async with plain_gateway(gateway_server, recorder.runtime) as p:
        data = message_create("/deploy once")
        await p.say(data)
        await p.send(data)
        assert await p.was_taken(data["id"], 2) is False
        replies = p.h.fake.posted[DM]
    assert recorder.sources == ["/deploy once"]
    assert len(replies) == 1
