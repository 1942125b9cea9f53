"""Plain messages over Discord's Gateway connection, through hikari's GatewayBot against the
fake Gateway: a DM and a mention get the webhook's answer for the same text, posted as a
reply in their channel; what is not for the bot is left alone; a message runs once.
"""

from __future__ import annotations

import aiohttp

from .plain_harness import DM, ROOM, message_create, mentioning, plain_gateway


async def webhook(url: str, text: str, conversation: str = "w") -> dict:
    async with aiohttp.ClientSession() as session:
        body = {"conversation": conversation, "user": "U1", "text": text}
        async with session.post(url + "/v1/messages", json=body) as response:
            assert response.status == 200
            return await response.json()


async def test_a_dm_gets_the_webhooks_answer_as_a_reply(gateway_server):
    async with plain_gateway(gateway_server) as p:
        web = await webhook(p.h.server.url, "/echo hi")
        data = message_create("/echo hi")
        [reply] = await p.say(data)
        identified = p.socket.identified
    assert reply.content == web["reply"]["text"]
    assert [i["intents"] for i in identified] == [(1 << 9) | (1 << 12)]  # no privileged intent
    [post] = p.h.fake.writes("POST", f"/channels/{DM}/messages")
    assert post.body["message_reference"]["message_id"] == data["id"]
    assert post.body["allowed_mentions"] == {"parse": []}  # the reply pings nobody
