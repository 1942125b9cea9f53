"""Hostile requests and texts on ``POST /discord/interactions``: each is refused with a 4xx in
the webhook's error shape (never a 500) or answered within Discord's limits, /healthz keeps
answering, and nothing runs for a request that is refused.
"""

from __future__ import annotations

import json

import pytest

from contract import Command
from tests.adversarial.common import FLAVORS, fill, healthz_watch, raw_request
from tests.slack.slack_harness import Recorder, ScriptedRuntime, deltas

from .fake import LIMIT, fake_discord
from .harness import WAIT, discord_gateway
from .interactions import PATH, command, signed

DEPLOY = (Command(name="deploy"),)


async def test_malformed_signed_bodies_are_4xx_and_run_nothing(gateway_server):
    recorder = Recorder(DEPLOY)
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, recorder.runtime, webhook_max_body=4096) as h,
    ):
        surrogate = json.dumps(command("agent", ("command", 3, "deploy x"))).replace(
            "deploy x", "deploy \\ud800"
        )
        bodies = {
            "not JSON": b"{nope",
            "not UTF-8": b'{"type": 2, "x": "\xff"}',
            "a lone surrogate": surrogate.encode(),
            "not an object": b"[1, 2]",
            "no type": b'{"id": "1"}',
            "not an interaction": json.dumps({"type": 2, "id": "x"}).encode(),
            "too large": json.dumps({"type": 1, "pad": "x" * 5000}).encode(),
        }
        for why, body in bodies.items():
            url = h.server.url + PATH
            async with h.discord.session.post(url, data=body, headers=signed(body)) as response:
                assert 400 <= response.status < 500, why
                assert "error" in await response.json(), why
        await h.channel.inputs.drain(WAIT)
    assert recorder.sources == []


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
async def test_hostile_replies_stay_within_discords_limit(gateway_server, flavor):
    runtime = ScriptedRuntime(deltas(fill(flavor, 5000)), DEPLOY)
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        payload = command("deploy")
        await h.interact(payload)
        replies = await h.replies(payload["token"])
    assert len(replies) >= 3
    assert all(0 < len(r.content) <= LIMIT for r in replies)
    assert "".join(r.content for r in replies).replace("\n", "").replace(" ", "") == fill(
        flavor, 5000
    ).replace("\n", "").replace(" ", "")


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
@pytest.mark.parametrize("form", ["umbrella", "command"])
async def test_a_command_of_6000_characters(gateway_server, flavor, form):
    """Discord's longest option value, in every kind of hard text, reaches the runtime."""
    text = fill(flavor, 6_000).strip() or "x"
    recorder = Recorder(DEPLOY)
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, recorder.runtime) as h,
        healthz_watch(h.server.url),
    ):
        if form == "umbrella":
            payload = command("agent", ("command", 3, "deploy " + text))
        else:
            payload = command("deploy", ("arguments", 3, text))
        status, _ = await h.interact(payload)
        assert status == 200
        replies = await h.replies(payload["token"])
    [source] = recorder.sources
    assert source == "/deploy " + text
    assert all(0 < len(r.content) <= LIMIT for r in replies)
    shown = "".join("".join(r.content.split()) for r in replies)
    assert shown == "".join(("got: " + source).split())


@pytest.mark.parametrize(
    "replace",
    [
        {"X-Signature-Ed25519": b"\xff\xfe"},
        {"X-Signature-Timestamp": b"17\xff00000000"},
        {"X-Signature-Timestamp": "١٧٠٠٠٠٠٠٠٠".encode()},  # digits int() takes
        {"X-Signature-Ed25519": "é".encode()},
    ],
    ids=["signature-bytes", "timestamp-bytes", "timestamp-digits", "signature-utf8"],
)
async def test_signature_headers_outside_ascii_are_a_401(gateway_server, replace):
    recorder = Recorder(DEPLOY)
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, recorder.runtime) as h,
        healthz_watch(h.server.url),
    ):
        body = json.dumps(command("deploy")).encode()
        headers = {k: v.encode() for k, v in signed(body).items()} | replace
        head = b"\r\n".join(
            [
                f"POST {PATH} HTTP/1.1".encode(),
                *(k.encode() + b": " + v for k, v in headers.items()),
            ]
        )
        status, answer = await raw_request(h.server.url, head, body)
        assert status == 401, answer
        assert json.loads(answer)["error"]["code"] == "unauthorized"
        await h.channel.inputs.drain(WAIT)
    assert recorder.sources == []
