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
from gateway.attachments import FILES_NOT_SENT
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext, InboxWake
from slashgate.config import Settings
from tests.slack.slack_harness import Recorder

from .fake import FakeDiscord, Message, fake_discord
from .harness import Harness, discord_gateway
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


async def with_a_file(h: Harness, option: tuple[str, int, str], data: bytes, name: str) -> Message:
    """``/agent`` with ``option`` and one file, served by the fake; its one reply."""
    resolved = attached(h.fake, data, name, "text/csv")
    payload = command("agent", option, ("file", ATTACHMENT, "77"), resolved=resolved)
    await h.interact(payload)
    [reply] = await h.replies(payload["token"])
    return reply


async def test_an_attached_file_reaches_the_runtime_as_a_compositor_part(gateway_server):
    runtime = EmbeddedRuntime(
        EntityDefinition(type="parts", handler=parts, slash_commands=(Command(name="review"),))
    )
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        reply = await with_a_file(h, ("command", 3, "review this"), b"a,b\n1,2\n", "data.csv")
    assert reply.content == "/review this: file-attachment data.csv text/csv b'a,b\\n1,2\\n'"
    [download] = [c for c in fake.calls if c.path == "/files/data.csv"]
    assert download.authorization is None  # the bot token goes to the API only


async def test_a_file_goes_with_plain_text_through_the_umbrellas_text_option(gateway_server):
    """``/agent``'s ``command`` was required: a file could only go with a command."""
    runtime = EmbeddedRuntime(EntityDefinition(type="parts", handler=parts))
    async with fake_discord() as fake, discord_gateway(gateway_server, fake, runtime) as h:
        reply = await with_a_file(h, ("text", 3, "what is in it?"), b"a,b\n", "data.csv")
    assert reply.content == "what is in it?: file-attachment data.csv text/csv b'a,b\\n'"
    [umbrella] = [c for c in fake.commands["global"] if c["name"] == "agent"]
    assert [(o["name"], o.get("required", False)) for o in umbrella["options"]] == [
        ("command", False),
        ("text", False),
        ("file", False),
    ]


async def test_a_file_sent_with_a_gateway_command_is_not_downloaded(gateway_server):
    async with fake_discord() as fake, discord_gateway(gateway_server, fake) as h:
        reply = await with_a_file(h, ("command", 3, "help"), b"secret", "notes.csv")
    assert FILES_NOT_SENT in reply.content  # still said, as on every channel
    assert not [c for c in fake.calls if c.path.startswith("/files/")]


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


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:9/files/a.png", True),  # the origin of discord_api_base, as it is
        ("https://127.0.0.1:9/files/a.png", False),  # another scheme
        ("http://127.0.0.1:10/files/a.png", False),  # another port
        ("http://localhost:9/files/a.png", False),  # another host name
        ("https://cdn.discordapp.com/attachments/1/2/a.png", True),
    ],
)
def test_besides_discords_cdn_only_the_origin_of_the_api_base_is_fetched(
    url: str, allowed: bool
) -> None:
    """docs/discord.md and docs/attachments.md say the same: a test server's plain http
    is taken only because the API base itself is that origin.
    """
    files = DiscordFiles(Settings.model_construct(discord_api_base="http://127.0.0.1:9/api/v10"))  # type: ignore[arg-type]
    assert files.allowed(URL(url)) is allowed
