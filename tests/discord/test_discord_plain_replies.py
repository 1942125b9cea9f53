"""Replies to plain messages: streamed by editing the reply in the channel, cut at 2,000
characters with code blocks reopened in further messages; a message's files reach the
runtime as compositor parts within the limits, downloaded without the bot token.
"""

from __future__ import annotations

import asyncio
from typing import Any

from contract import Command
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition
from tests.slack.slack_harness import Recorder, ScriptedRuntime, deltas

from .fake import FakeDiscord
from .harness import WAIT
from .plain_harness import message_create, plain_gateway
from .test_discord_files import parts
from .test_discord_replies import DEPLOY, LONG, cut_well, streamed, two_parts


def attachment(fake: FakeDiscord, data: bytes, name: str, kind: str) -> dict[str, Any]:
    """A message's attachment as Discord sends it, served by the fake."""
    fake.files[name] = data
    return {
        "id": "88",
        "filename": name,
        "size": len(data),
        "content_type": kind,
        "url": fake.file_url(name),
        "proxy_url": fake.file_url(name),
    }


async def test_a_long_reply_is_cut_with_code_blocks_reopened(gateway_server):
    async with plain_gateway(gateway_server, ScriptedRuntime(deltas(LONG), DEPLOY)) as p:
        cut_well(await p.say(message_create("/deploy")))


async def test_the_reply_streams_by_editing_it(gateway_server):
    step = asyncio.Event()
    async with plain_gateway(gateway_server, ScriptedRuntime(two_parts(step), DEPLOY)) as p:
        data = message_create("/deploy")
        await p.send(data)
        await asyncio.wait_for(p.h.fake.said.wait(), WAIT)
        step.set()
        [reply] = await p.answered(data)
    streamed(reply)


async def test_a_file_reaches_the_runtime_as_a_compositor_part(gateway_server):
    runtime = EmbeddedRuntime(
        EntityDefinition(type="parts", handler=parts, slash_commands=(Command(name="review"),))
    )
    async with plain_gateway(gateway_server, runtime) as p:
        attached = attachment(p.h.fake, b"a,b\n1,2\n", "data.csv", "text/csv")
        [reply] = await p.say(message_create("/review this", attachments=(attached,)))
        downloads = [c for c in p.h.fake.calls if c.path == "/files/data.csv"]
    assert reply.content == "/review this: file-attachment data.csv text/csv b'a,b\\n1,2\\n'"
    assert [d.authorization for d in downloads] == [None]  # the bot token goes to the API only


async def test_an_oversize_file_gets_one_reply_and_is_never_downloaded(gateway_server):
    recorder = Recorder(DEPLOY)
    async with plain_gateway(gateway_server, recorder.runtime, attachment_max_bytes=100) as p:
        big = attachment(p.h.fake, b"z" * 150, "big.bin", "application/octet-stream")
        [reply] = await p.say(message_create("/deploy", attachments=(big,)))
        downloads = [c for c in p.h.fake.calls if c.path.startswith("/files/")]
    assert "big.bin is 150 bytes, over the limit of 100 bytes per file" in reply.content
    assert downloads == []
    assert recorder.sources == []
