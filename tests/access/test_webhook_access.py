"""The webhook stays the token holder's: anyone with it talks, no pairing, no limits. With
``webhook_owners`` set, owner-only commands follow the ``user`` field as on the chat channels,
and the commands offered to a ``user`` (``/v1/commands``, ``/v1/complete``) are theirs.
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


async def test_the_commands_offered_to_a_user_are_those_they_may_run(gateway_server) -> None:
    settings = {**ACCESS_DEFAULTS, "webhook_owners": ["boss"]}
    async with gateway_server(Recording(), **settings) as server, aiohttp.ClientSession() as s:

        async def names(path: str, **query: str) -> list[str]:
            async with s.get(server.url + path, params={"conversation": "c1", **query}) as resp:
                assert resp.status == 200
                body = await resp.json()
            return [c["name"] for c in body.get("commands", body.get("items", []))]

        everyone = await names("/v1/commands")
        member = await names("/v1/commands", user="me")
        owner = await names("/v1/commands", user="boss")
        completed = await names("/v1/complete", user="me", text="/")
        async with s.get(server.url + "/v1/commands", params={"user": "x" * 257}) as resp:
            too_long = resp.status
    assert {"mode", "new", "echo"} <= set(everyone) and set(owner) == set(everyone)
    assert "echo" in member and not {"mode", "new"} & set(member)
    assert "echo" in completed and not {"mode", "new"} & set(completed)
    assert too_long == 400
