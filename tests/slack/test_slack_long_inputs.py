"""A slash command longer than a Slack message gets its reply, and the gateway keeps serving.

Issue 21, defect 1: the invocation line repeated the whole command, left the reply no room in
the first message, and the chunker looped for ever on that limit: no reply, 100% CPU,
``/healthz`` silent. (On that code the loop watchdog fails these tests within a second.)
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qsl

import aiohttp
import pytest
from pydantic import SecretStr

from channels.slack.manners import COMMAND_SHOWN
from channels.slack.mrkdwn import TEXT_LIMIT
from contract import Command, utf16_len
from tests.slack.slack_fake import APP_TOKEN, WAIT, command_body, fake_slack
from tests.slack.slack_harness import LEAD, Harness, Recorder, lead, slack_gateway

DEPLOY = (Command(name="deploy", description="Deploy a build", hint="environment"),)
# Past the ~3,980 characters at which the invocation line alone filled the first message.
LONG = "/deploy " + " ".join(["prod-east"] * 500)


async def send(h: Harness, socket_mode: bool, text: str, name: str) -> None:
    """``/agent text`` as Slack sends it: over HTTP, or over Socket Mode through bolt."""
    url = h.fake.response_url(name)
    if socket_mode:
        form = dict(parse_qsl(command_body("/agent", text, channel="C1", response_url=url)))
        await h.fake.push("slash_commands", form)
    else:
        assert await h.slack.command("/agent", text, channel="C1", response_url=url) == (200, "")


async def healthz_while(h: Harness, work: asyncio.Future[None]) -> list[float]:
    """Ask ``/healthz`` until ``work`` is done; how long each answer took, in seconds."""
    loop = asyncio.get_running_loop()
    took: list[float] = []
    async with aiohttp.ClientSession() as session:
        while not work.done():
            start = loop.time()
            async with asyncio.timeout(1), session.get(f"{h.server.url}/healthz") as response:
                assert response.status == 200
            took.append(loop.time() - start)
    return took


@pytest.mark.parametrize("socket_mode", [False, True], ids=["http", "socket-mode"])
async def test_a_slash_command_past_4000_characters_gets_its_reply(gateway_server, socket_mode):
    recorder = Recorder(DEPLOY)
    tokens = {"slack_app_token": SecretStr(APP_TOKEN)} if socket_mode else {}
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime, **tokens) as h,
    ):
        await send(h, socket_mode, LONG, "long")
        await recorder.received.wait()
        drained = asyncio.ensure_future(h.channel.drain(WAIT))
        took = await healthz_while(h, drained)
        await drained
        replies = fake.messages("C1")
        await send(h, socket_mode, "/deploy prod", "next")  # the conversation goes on
        await fake.wait_for(lambda: len(fake.messages("C1")) > len(replies))
        await h.channel.drain(WAIT)

    assert recorder.sources == [LONG, "/deploy prod"]
    assert took, "/healthz was not asked while the reply went out"
    assert len(replies) >= 2
    assert all(utf16_len(m.text) <= TEXT_LIMIT for m in replies)
    # The first message says who ran what, the command cut short; then the whole reply.
    shown = lead(replies[0])
    assert shown is not None
    assert shown.endswith(" …")
    assert utf16_len(shown) <= COMMAND_SHOWN
    assert f"/agent {LONG}".startswith(shown.removesuffix(" …"))
    # Cut between words: the space at a cut is the message boundary.
    body = [LEAD.sub("", replies[0].text, count=1), *(m.text for m in replies[1:])]
    assert " ".join(body).split() == f"got: {LONG}".split()
    assert [m.text for m in fake.messages("C1")[len(replies) :]] == [
        "<@U1> ran `/agent /deploy prod`\ngot: /deploy prod"
    ]
    assert json.dumps(fake.responses) == "[]"  # nothing went to the response_url
