"""``POST /discord/interactions``: signatures (forged, stale, unsigned: 401, nothing run), PING,
a command deferred then answered by editing the original response, replays run once, host
commands and rejections only for the user.
"""

from __future__ import annotations

import json

from nacl.signing import SigningKey

from contract import Command
from tests.slack.slack_harness import Recorder

from .fake import EPHEMERAL, fake_discord
from .harness import DEFERRED, discord_gateway
from .interactions import command, signed

DEPLOY = (Command(name="deploy", description="Deploy a build"),)


async def test_ping_is_answered_once_verified(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        status, body = await h.discord.post({"type": 1})
        assert (status, body) == (200, {"type": 1})


async def test_forged_stale_and_unsigned_requests_are_refused_and_run_nothing(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        payload = command("agent", ("command", 3, "deploy prod"))
        body = json.dumps(payload).encode()
        forged = signed(body, SigningKey.generate())
        stale = signed(body, stamp=1_000_000_000)
        tampered = signed(body)
        unsigned = {"Content-Type": "application/json"}
        not_hex = {**signed(body), "X-Signature-Ed25519": "zz"}
        for headers in (forged, stale, unsigned, not_hex):
            status, answer = await h.discord.post(payload, headers)
            assert status == 401, headers
            assert answer["error"]["code"] == "unauthorized"
        status, _ = await h.discord.post({**payload, "id": "1"}, tampered)
        assert status == 401
        ping = json.dumps({"type": 1}).encode()
        status, _ = await h.discord.post({"type": 1}, signed(ping, SigningKey.generate()))
        assert status == 401
        await h.channel.inputs.drain(1.0)
    assert recorder.sources == []
    assert fake.calls == [c for c in fake.calls if "/webhooks/" not in c.path]


async def test_a_command_is_deferred_then_its_reply_edits_the_original(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        payload = command("agent", ("command", 3, "deploy prod"))
        status, body = await h.interact(payload)
        assert (status, body) == (200, {"type": DEFERRED})
        [reply] = await h.replies(payload["token"])
    assert reply.content == "got: /deploy prod"
    assert recorder.sources == ["/deploy prod"]
    assert not reply.ephemeral


async def test_a_replayed_interaction_runs_once(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        payload = command("agent", ("command", 3, "deploy prod"))
        for _ in range(3):
            status, body = await h.interact(payload)
            assert (status, body) == (200, {"type": DEFERRED})
        await h.replies(payload["token"])
        assert h.server.gateway.metrics.registry is not None
    assert recorder.sources == ["/deploy prod"]
    assert len(fake.writes("PATCH", payload["token"])) == 1


async def test_host_commands_are_deferred_for_the_user_alone(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        payload = command("help")
        status, body = await h.interact(payload)
        assert (status, body) == (200, {"type": DEFERRED, "data": {"flags": EPHEMERAL}})
        [reply] = await h.replies(payload["token"])
    assert "/help" in reply.content


async def test_a_rejection_replaces_the_public_response_with_an_ephemeral_one(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        payload = command("agent", ("command", 3, "nope"))
        status, body = await h.interact(payload)
        assert (status, body) == (200, {"type": DEFERRED})
        [reply] = await h.replies(payload["token"])
    assert reply.ephemeral
    assert reply.content == (
        "Unsupported slash command /nope. Send /help to list available commands."
    )
    assert fake.originals[payload["token"]].deleted


async def test_the_route_is_documented(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        async with h.discord.session.get(h.server.url + "/openapi.json") as response:
            spec = await response.json()
    operation = spec["paths"]["/discord/interactions"]["post"]
    assert {"200", "400", "401", "413", "503"} <= set(operation["responses"])
