"""Attachment options reach the runtime as compositor parts, within the limits; no token
goes with a download, and only Discord's hosts are fetched.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from yarl import URL

from channels.discord.files import DiscordFiles
from contract import Command
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext, InboxWake
from slashgate.config import Settings
from tests.slack.slack_harness import Recorder

from .fake import FakeDiscord, fake_discord
from .harness import discord_gateway
from .interactions import command

ATTACHMENT = 11


def attached(fake: FakeDiscord, data: bytes, name: str, kind: str) -> dict[str, Any]:
    """The ``resolved`` part of an interaction with one attachment, served by the fake."""
    fake.files[name] = data
    item = {"id": "77", "filename": name, "size": len(data), "content_type": kind}
    return {"attachments": {"77": {**item, "url": fake.file_url(name), "proxy_url": ""}}}


async def parts(ctx: HandlerContext) -> None:
    """Reply with the compositor parts that came with the input: name, type, bytes."""
    if isinstance(ctx.wake, InboxWake):
        payload = ctx.wake.message.payload
        shown = [
            f"{p['type']} {p['name']} {p['mime']} {base64.b64decode(p['data'])!r}"
            for p in payload.get("attachments") or ()
        ]
        await ctx.reply(f"{payload['source']}: " + "; ".join(shown))


async def test_an_attached_file_reaches_the_runtime_as_a_compositor_part(gateway_server):
    runtime = EmbeddedRuntime(
        EntityDefinition(type="parts", handler=parts, slash_commands=(Command(name="review"),))
    )
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        resolved = attached(fake, b"a,b\n1,2\n", "data.csv", "text/csv")
        payload = command(
            "agent", ("command", 3, "review this"), ("file", ATTACHMENT, "77"), resolved=resolved
        )
        await h.interact(payload)
        [reply] = await h.replies(payload["token"])
    assert reply.content == "/review this: file-attachment data.csv text/csv b'a,b\\n1,2\\n'"
    [download] = [c for c in fake.calls if c.path == "/files/data.csv"]
    assert download.authorization is None  # the bot token goes to the API only


async def test_an_oversize_file_gets_one_reply_and_is_never_downloaded(gateway_server):
    recorder = Recorder((Command(name="deploy"),))
    async with (
        fake_discord() as fake,
        discord_gateway(gateway_server, fake, recorder.runtime, attachment_max_bytes=100) as h,
    ):
        resolved = attached(fake, b"z" * 150, "big.bin", "application/octet-stream")
        payload = command("deploy", ("file", ATTACHMENT, "77"), resolved=resolved)
        await h.interact(payload)
        [reply] = await h.replies(payload["token"])
    assert "big.bin is 150 bytes, over the limit of 100 bytes per file" in reply.content
    assert not [c for c in fake.calls if c.path.startswith("/files/")]
    assert recorder.sources == []


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://cdn.discordapp.com/attachments/1/2/a.png", True),
        ("https://media.discordapp.net/attachments/1/2/a.png", True),
        ("http://cdn.discordapp.com/attachments/1/2/a.png", False),
        ("https://cdn.discordapp.com.evil.example/a.png", False),
        ("https://example.com/a.png", False),
    ],
)
def test_in_production_only_discords_file_hosts_are_fetched(url: str, allowed: bool) -> None:
    files = DiscordFiles(Settings.model_construct(discord_api_base="https://discord.com/api/v10"))  # type: ignore[arg-type]
    assert files.allowed(URL(url)) is allowed
