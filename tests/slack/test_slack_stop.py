"""Stopping: Slack is told to come back later, inputs in flight finish or say why they did not."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from contract import Command
from tests.slack.slack_fake import (
    WAIT,
    command_body,
    event_body,
    fake_slack,
    mention,
    signed_headers,
)
from tests.slack.slack_harness import Harness, Held, ScriptedRuntime, slack_gateway

DEPLOY = (Command(name="deploy", description="Deploy a build"),)


async def post(h: Harness, body: str, content_type: str) -> tuple[int, str | None, Any]:
    """A signed request: its status, Retry-After and JSON body."""
    headers = signed_headers(body, content_type)
    async with h.slack.session.post(h.slack.url, data=body.encode(), headers=headers) as resp:
        return resp.status, resp.headers.get("Retry-After"), json.loads(await resp.text())


async def test_while_stopping_slack_is_asked_to_retry_and_nothing_new_runs(gateway_server):
    slow = Held("finished")
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(slow, DEPLOY)) as h,
    ):
        await h.slack.event(mention("first", channel="C1", ts="70.1"))
        await asyncio.wait_for(slow.started.wait(), WAIT)
        stopping = asyncio.ensure_future(h.channel.stop())  # runs before the next request
        late = [
            await post(h, event_body(mention("late", channel="C1", ts="70.2")), "application/json"),
            await post(
                h,
                command_body("/deploy", "prod", channel="C2", response_url=fake.response_url("r")),
                "application/x-www-form-urlencoded",
            ),
        ]
        slow.release.set()
        await asyncio.wait_for(stopping, WAIT)
    retry = {"code": "service_unavailable", "message": "the gateway is stopping, retry later"}
    assert late == [(503, "1", {"error": retry}), (503, "1", {"error": retry})]
    assert slow.sources == ["first"]
    # The input in flight when the channel began to stop was finished and answered.
    assert [(m.thread_ts, m.text) for m in fake.messages()] == [("70.1", "finished")]
    assert fake.responses == []


async def test_an_input_still_running_when_the_channel_stops_gets_one_message(gateway_server):
    stuck = Held()  # never released: only the channel's stop ends its turn
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, ScriptedRuntime(stuck), cancel_grace=0.1) as h,
    ):
        await h.slack.event(mention("hang on", channel="C3", ts="80.1"))
        await asyncio.wait_for(stuck.started.wait(), WAIT)
        await asyncio.wait_for(h.channel.stop(), WAIT)
    assert [(m.thread_ts, m.text) for m in fake.messages("C3")] == [
        ("80.1", ":warning: The request failed: the gateway stopped before the reply was finished")
    ]
