"""The Discord endpoint's core, called directly: bytes and headers in, an answer out, no HTTP
request on the way (the aiohttp route is a thin adapter around it, as hikari's interaction
server is)."""

from __future__ import annotations

import json
import time
from typing import Any

from multidict import CIMultiDict
from nacl.signing import SigningKey

from channels.endpoint import Answer
from contract import Command
from tests.slack.slack_harness import Recorder

from .fake import fake_discord
from .harness import DEFERRED, Harness, discord_gateway
from .interactions import command, signed

DEPLOY = (Command(name="deploy", description="Deploy a build"),)


async def answer(h: Harness, body: bytes, headers: dict[str, str]) -> Answer:
    return await h.channel.endpoint.answer(body, CIMultiDict(headers))


def encoded(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


async def test_the_core_refuses_a_bad_or_stale_signature_and_a_malformed_body(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        body = encoded(command("agent", ("command", 3, "deploy prod")))
        forged = await answer(h, body, signed(body, SigningKey.generate()))
        stale = await answer(h, body, signed(body, stamp=int(time.time()) - 5 * 60 - 1))
        broken = b'{"type": 2, "data": '
        malformed = await answer(h, broken, signed(broken))
        odd = encoded({"type": True})
        not_one = await answer(h, odd, signed(odd))
        await h.channel.inputs.drain(1.0)
    for refused in (forged, stale):
        assert refused.status == 401
        assert refused.json() == {
            "error": {"code": "unauthorized", "message": "invalid or expired Discord signature"}
        }
    assert malformed.status == 400
    assert malformed.json()["error"]["code"] == "malformed_json"
    assert malformed.json()["error"]["message"].startswith("request body is not valid JSON")
    assert (not_one.status, not_one.json()["error"]["message"]) == (
        400,
        "not a Discord interaction",
    )
    assert recorder.sources == []


async def test_the_core_answers_a_ping_and_defers_a_command_that_then_runs(gateway_server):
    recorder = Recorder(DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, recorder.runtime) as h:
        ping = encoded({"type": 1})
        pong = await answer(h, ping, signed(ping))
        payload = command("agent", ("command", 3, "deploy prod"))
        body = encoded(payload)
        deferred = await answer(h, body, signed(body))
        await h.channel.inputs.drain(5.0)
    assert (pong.status, pong.json()) == (200, {"type": 1})
    assert pong.headers["Content-Type"] == "application/json; charset=utf-8"
    assert (deferred.status, deferred.json()) == (200, {"type": DEFERRED})
    assert recorder.sources == ["/deploy prod"]
