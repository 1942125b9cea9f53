"""Files shared on Slack reach the runtime, downloaded with the bot token from Slack only."""

from __future__ import annotations

from pathlib import Path

import pytest
from yarl import URL

from channels.slack.files import SlackFiles
from tests.acp.prompts import decoded, prompts, recording_agent
from tests.conftest import make_settings
from tests.slack.slack_fake import (
    BOT_TOKEN,
    BOT_USER,
    WAIT,
    direct_message,
    fake_slack,
    mention,
)
from tests.slack.slack_harness import Recorder, slack_gateway

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 50


async def test_files_in_a_direct_message_reach_the_acp_agent_as_image_and_resource_blocks(
    gateway_server, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path, caps="image,embeddedContext")
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        files = [
            fake.add_file(PNG, "chart.png", "image/png"),
            fake.add_file("# Notes\nship it ✅".encode(), "notes.md", "text/markdown"),
        ]
        event = direct_message("see attached", ts="500.1", subtype="file_share", files=files)
        status, _ = await h.slack.event(event)
        await h.channel.drain(WAIT)
    assert status == 200
    [blocks] = prompts(record)
    assert [b["type"] for b in blocks] == ["text", "image", "resource"]
    assert blocks[0]["text"] == "see attached"
    assert (blocks[1]["mimeType"], decoded(blocks[1])) == ("image/png", PNG)
    resource = blocks[2]["resource"]
    assert (resource["mimeType"], resource["text"]) == ("text/markdown", "# Notes\nship it ✅")
    # Fetched with the bot token, and the reply shows what the agent received.
    assert [token for _, token in fake.downloads] == [BOT_TOKEN, BOT_TOKEN]
    [reply] = fake.messages("D1")
    assert "image:image/png:" in reply.text and "resource:attachment:notes.md" in reply.text


async def test_a_file_on_a_mention_reaches_the_embedded_runtime(gateway_server) -> None:
    async with fake_slack() as fake, slack_gateway(gateway_server, fake) as h:  # the demo
        event = mention("", channel="C7", ts="600.1")
        event["files"] = [fake.add_file(b"a,b\n1,2\n", "data.csv", "text/csv")]
        await h.slack.event(event)
        await h.channel.drain(WAIT)
    [reply] = fake.messages("C7")
    assert reply.thread_ts == "600.1"
    assert reply.text == "You sent data.csv (text/csv, 8 bytes)."


async def test_an_oversize_file_gets_one_reply_and_is_never_downloaded(gateway_server) -> None:
    recorder = Recorder()
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, recorder.runtime, attachment_max_bytes=100) as h,
    ):
        files = [fake.add_file(b"z" * 150, "big.bin", "application/octet-stream")]
        await h.slack.event(direct_message("take this", ts="700.1", files=files))
        await h.channel.drain(WAIT)
    [reply] = fake.messages("D1")
    assert "big.bin is 150 bytes, over the limit of 100 bytes per file" in reply.text
    assert fake.downloads == [] and recorder.sources == []


async def test_the_token_goes_to_no_host_but_slack(gateway_server) -> None:
    recorder = Recorder()
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        elsewhere = fake.add_file(b"secret?", "leak.txt", "text/plain")
        # Another origin than the Slack API's (here the gateway itself, on loopback).
        elsewhere["url_private_download"] = f"{h.server.url}/v1/commands"
        await h.slack.event(direct_message(f"<@{BOT_USER}> read", ts="800.1", files=[elsewhere]))
        await h.channel.drain(WAIT)
    [reply] = fake.messages("D1")
    assert "leak.txt could not be downloaded from Slack (127.0.0.1 is not a Slack file host)" in (
        reply.text
    )
    assert recorder.sources == []


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://files.slack.com/files-pri/T1-F1/a.png", True),
        ("https://slack.com/files/a.png", True),
        ("http://files.slack.com/files-pri/T1-F1/a.png", False),  # the token in clear text
        ("https://files.slack.com.evil.example/a.png", False),
        ("https://notslack.com/a.png", False),
        ("https://evil.example/files.slack.com/a.png", False),
    ],
)
def test_in_production_only_slack_hosts_get_the_token(url: str, allowed: bool) -> None:
    files = SlackFiles(make_settings(), BOT_TOKEN)  # the default API base: slack.com
    assert files.allowed(URL(url)) is allowed


async def test_a_file_with_a_malformed_link_gets_one_reply(gateway_server) -> None:
    recorder = Recorder()
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, recorder.runtime) as h:
        broken = fake.add_file(b"data", "broken.txt", "text/plain")
        broken["url_private_download"] = "https://files.slack.com:99999/broken.txt"
        await h.slack.event(direct_message("read", ts="900.1", files=[broken]))
        await h.channel.drain(WAIT)
    [reply] = fake.messages("D1")
    assert "broken.txt could not be downloaded from Slack (malformed URL)" in reply.text
    assert fake.downloads == [] and recorder.sources == []
