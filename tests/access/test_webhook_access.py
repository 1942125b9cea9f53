"""The webhook stays the token holder's: anyone with it talks, no pairing, no limits. With
``webhook_owners`` set, owner-only commands follow the ``user`` field as on the chat channels.
"""

from __future__ import annotations

import aiohttp

from tests.access.recording import Recording
from tests.conftest import ACCESS_DEFAULTS


async def post(session: aiohttp.ClientSession, url: str, user: str, text: str) -> dict:
    body = {"conversation": "c1", "user": user, "text": text}
    async with session.post(url + "/v1/messages", json=body) as resp:
        assert resp.status == 200
        return await resp.json()


async def test_owner_only_commands_follow_the_webhook_owners(gateway_server) -> None:
    runtime = Recording()
    settings = {**ACCESS_DEFAULTS, "webhook_owners": ["boss"]}
    async with gateway_server(runtime, **settings) as server, aiohttp.ClientSession() as s:
        refused = await post(s, server.url, "me", "/mode code")
        help_ = await post(s, server.url, "me", "/help")
        ran = await post(s, server.url, "me", "/echo hi")
        switched = await post(s, server.url, "boss", "/mode code")
    assert refused["reply"] == {
        "text": "Slash command /mode is not allowed for you here.",
        "category": "forbidden",
        "stop_reason": None,
    }
    assert refused["forwarded"] is None
    assert "/mode" not in help_["reply"]["text"] and "/pair" not in help_["reply"]["text"]
    assert ran["reply"]["text"] == "ran: /echo hi"
    assert switched["reply"]["text"] == "Mode set to `code`."
    assert runtime.modes_set == ["code"]


async def test_without_owners_every_token_holder_is_one(gateway_server) -> None:
    runtime = Recording()
    async with gateway_server(runtime, **ACCESS_DEFAULTS) as server, aiohttp.ClientSession() as s:
        switched = await post(s, server.url, "anyone", "/mode code")
        for n in range(8):  # no per-sender limit on the token holder's API
            assert (await post(s, server.url, "anyone", f"/echo {n}"))["reply"]["category"] is None
    assert switched["reply"]["text"] == "Mode set to `code`."
