"""The Slack endpoint's core, called directly: bytes and headers in, an answer out, no HTTP
request on the way (the aiohttp route is a thin adapter around it)."""

from __future__ import annotations

import time

from multidict import CIMultiDict

from channels.endpoint import Answer
from contract import Command

from .slack_fake import WAIT, command_body, event_body, fake_slack, mention, signed_headers
from .slack_harness import Harness, Recorder, slack_gateway

FORM = "application/x-www-form-urlencoded"
DEPLOY = (Command(name="deploy", description="Deploy a build"),)


async def answer(h: Harness, body: str, headers: dict[str, str]) -> Answer:
    return await h.channel.endpoint.answer(body.encode(), CIMultiDict(headers))


async def test_the_core_refuses_a_bad_or_stale_signature_and_a_malformed_body(gateway_server):
    recorder = Recorder()
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        body = event_body(mention("hello", ts="1.1"))
        forged = await answer(h, body, signed_headers(body, "application/json", secret="nope"))
        stale_stamp = int(time.time()) - 5 * 60 - 1
        stale = await answer(h, body, signed_headers(body, "application/json", stale_stamp))
        unsigned = await answer(h, body, {"Content-Type": "application/json"})
        broken = '{"type": "event_callback", "event": '
        malformed = await answer(h, broken, signed_headers(broken, "application/json"))
        lone = event_body(mention("\ud800", ts="1.2"))
        surrogate = await answer(h, lone, signed_headers(lone, "application/json"))
        await h.channel.drain(WAIT)
    unauthorized = {
        "error": {"code": "unauthorized", "message": "invalid or expired Slack signature"}
    }
    for refused in (forged, stale, unsigned):
        assert (refused.status, refused.json()) == (401, unauthorized)
        assert refused.headers["Content-Type"] == "application/json; charset=utf-8"
    assert malformed.status == 400
    assert malformed.json()["error"]["code"] == "malformed_json"
    assert malformed.json()["error"]["message"].startswith("request body is not valid JSON")
    assert surrogate.status == 400
    assert surrogate.json()["error"] == {
        "code": "invalid_text",
        "message": "event.text: not valid Unicode text (a lone surrogate, or bytes that are "
        "not UTF-8)",
    }
    assert recorder.sources == []


async def test_the_core_acknowledges_a_signed_command_and_its_reply_goes_to_slack(
    gateway_server,
):
    recorder = Recorder(DEPLOY)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        body = command_body("/agent", "deploy prod", response_url=fake.response_url("r1"))
        acknowledged = await answer(h, body, signed_headers(body, FORM))
        await h.channel.drain(WAIT)
    assert (acknowledged.status, acknowledged.body) == (200, b"")
    assert acknowledged.headers["Content-Type"] == "text/plain"
    assert recorder.sources == ["/deploy prod"]
    assert any("got: /deploy prod" in m.text for m in fake.messages())


async def test_bolts_own_answer_keeps_its_body_and_media_type(gateway_server):
    async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
        body = '{"token": "t", "challenge": "c-1", "type": "url_verification"}'
        challenged = await answer(h, body, signed_headers(body, "application/json"))
    assert (challenged.status, challenged.json()) == (200, {"challenge": "c-1"})
    assert challenged.headers["Content-Type"] == "application/json"
