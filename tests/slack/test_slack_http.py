"""Requests reach the bolt app only when Slack signed them, recently."""

from __future__ import annotations

import json
import time

from tests.slack.slack_fake import WAIT, event_body, fake_slack, mention, signed_headers
from tests.slack.slack_harness import Recorder, slack_gateway


async def test_url_verification_is_answered(gateway_server):
    async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
        body = json.dumps(
            {"token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY", "type": "url_verification"}
        )
        status, text = await h.slack.post(body, "application/json")
    assert status == 200
    assert json.loads(text) == {"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY"}


async def test_bad_signature_is_401_and_nothing_runs(gateway_server):
    recorder = Recorder()
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        body = event_body(mention("hello", ts="1.1"))
        headers = signed_headers(body, "application/json", secret="not-the-secret")
        async with h.slack.session.post(h.slack.url, data=body, headers=headers) as resp:
            status, text = resp.status, await resp.text()
        # A signed request afterwards is served: once it is answered, "hello" would have been.
        await h.slack.event(mention("second", ts="1.2"))
        await h.channel.drain(WAIT)
    assert status == 401
    # The shape of the webhook channel's errors on the same server.
    assert json.loads(text) == {
        "error": {"code": "unauthorized", "message": "invalid or expired Slack signature"}
    }
    assert recorder.sources == ["second"]
    assert [m.text for m in fake.messages()] == ["got: second"]


async def test_signature_older_than_five_minutes_is_401(gateway_server):
    recorder = Recorder()
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        body = event_body(mention("hello", ts="1.1"))
        stale = int(time.time()) - 5 * 60 - 30
        headers = signed_headers(body, "application/json", timestamp=stale)
        async with h.slack.session.post(h.slack.url, data=body, headers=headers) as resp:
            stale_status = resp.status
        headers = {**signed_headers(body, "application/json"), "X-Slack-Request-Timestamp": "soon"}
        async with h.slack.session.post(h.slack.url, data=body, headers=headers) as resp:
            garbled_status = resp.status
        headers = {**signed_headers(body, "application/json"), "X-Slack-Signature": "v0=é"}
        async with h.slack.session.post(h.slack.url, data=body, headers=headers) as resp:
            foreign_status = resp.status
        async with h.slack.session.post(
            h.slack.url, data=body, headers={"Content-Type": "application/json"}
        ) as resp:
            unsigned_status = resp.status
    assert (stale_status, garbled_status, foreign_status, unsigned_status) == (401,) * 4
    assert recorder.sources == []


async def test_signed_garbage_is_a_4xx_with_a_message(gateway_server):
    async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:
        results = [
            await h.slack.post("payload=%7Bnot-json", "application/x-www-form-urlencoded"),
            await h.slack.post("[1, 2]", "application/json"),
            await h.slack.post(json.dumps({"type": "event_callback"}), "application/json"),
        ]
        async with h.slack.session.post(
            h.slack.url, data=b"\xff\xfe", headers=signed_headers("", "application/json")
        ) as resp:
            results.append((resp.status, await resp.text()))
    for status, text in results:
        assert 400 <= status < 500, (status, text)
        error = json.loads(text)["error"]  # the webhook's shape, bolt's own 404 included
        assert set(error) == {"code", "message"} and all(error.values()), text
