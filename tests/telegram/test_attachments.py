"""Files sent on Telegram reach the runtime: photos, documents, voice, video, audio, albums;
the size limits are checked before anything is downloaded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from gateway.events import MessageEnd
from tests.acp.prompts import decoded, prompts, recording_agent

from .fake_bot_api import TOKEN, WAIT, FakeBotAPI
from .helpers import GROUP, PRIVATE, Scripted, Start, message_update

PHOTO_SIZES = (b"s" * 100, b"m" * 400, b"L" * 900)  # Telegram's sizes of one photo


def file_update(
    chat_id: int, caption: str | None = None, *, group: str | None = None, **files: Any
) -> dict[str, Any]:
    """A message carrying ``files`` (``photo=[...]``, ``document={...}``, ...) and a caption."""
    update = message_update(chat_id, "")
    message = update["message"]
    del message["text"]
    if caption is not None:
        message["caption"] = caption
    if group is not None:
        message["media_group_id"] = group
    message.update(files)
    return update


def photo(fake: FakeBotAPI, *sizes: bytes) -> list[dict[str, Any]]:
    """The sizes of one photo, smallest first, each a file of its own (as Telegram has them)."""
    return [
        fake.add_file(data, f"photos/file_{len(fake.files)}.jpg", width=90 * i, height=60 * i)
        for i, data in enumerate(sizes, 1)
    ]


async def test_a_photo_reaches_the_acp_agent_as_an_image_block(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path, caps="image")
    async with telegram(runtime) as served:
        await served.deliver(file_update(PRIVATE, "what is this?", photo=photo(fake, *PHOTO_SIZES)))
    [blocks] = prompts(record)
    assert [b["type"] for b in blocks] == ["text", "image"]
    assert blocks[0]["text"] == "what is this?"
    assert blocks[1]["mimeType"] == "image/jpeg"
    assert decoded(blocks[1]) == PHOTO_SIZES[-1]  # the largest size, not the thumbnails
    assert fake.downloads == ["photos/file_2.jpg"]
    assert fake.texts(PRIVATE) == ["echo: text:what is this? | image:image/jpeg:900 bytes"]


async def test_an_album_is_one_message_with_the_caption_as_its_text(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path, caps="image")
    document = fake.add_file(b"%PDF-1.4 spec", "documents/spec.pdf", file_name="spec.pdf",
                             mime_type="application/pdf")  # fmt: skip
    items = [
        file_update(PRIVATE, group="album-1", photo=photo(fake, b"first")),
        file_update(PRIVATE, "compare these", group="album-1", photo=photo(fake, b"second")),
        file_update(PRIVATE, group="album-1", document=document),
    ]
    async with telegram(runtime, telegram_media_group_wait=0.3) as served:
        for item in items:  # as Telegram sends an album: one update per item, at once
            status, _ = await served.post(item)
            assert status == 200
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    [blocks] = prompts(record)  # one prompt for the three items
    assert [b["type"] for b in blocks] == ["text", "image", "image", "text"]
    assert blocks[0]["text"] == "compare these"
    assert [decoded(b) for b in blocks[1:3]] == [b"first", b"second"]
    # The agent takes no embedded context: the PDF is described, not dropped.
    assert "spec.pdf (application/pdf, 13 bytes)" in blocks[3]["text"]
    assert len(fake.texts(PRIVATE)) == 1  # and one reply


@pytest.mark.parametrize(
    ("kind", "fields", "name", "media_type"),
    [
        ("document", {"file_name": "notes.md", "mime_type": "text/markdown"}, "notes.md",
         "text/markdown"),
        ("voice", {"duration": 2, "mime_type": "audio/ogg"}, "voice.ogg", "audio/ogg"),
        ("video", {"duration": 2, "width": 64, "height": 64, "mime_type": "video/mp4"},
         "video.mp4", "video/mp4"),
        ("audio", {"duration": 2, "file_name": "song.mp3", "mime_type": "audio/mpeg"},
         "song.mp3", "audio/mpeg"),
    ],
)  # fmt: skip
async def test_documents_voice_video_and_audio_reach_the_runtime(
    telegram: Start,
    fake: FakeBotAPI,
    kind: str,
    fields: dict[str, Any],
    name: str,
    media_type: str,
) -> None:
    runtime = Scripted()
    data = f"{kind} bytes".encode()
    async with telegram(runtime) as served:
        sent = fake.add_file(data, f"x/{kind}", **fields)
        await served.post(file_update(PRIVATE, **{kind: sent}))
        turn = await runtime.next_turn()
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
    [attachment] = turn.turn.attachments
    assert (attachment.name, attachment.media_type, attachment.data) == (name, media_type, data)
    assert turn.turn.message.payload.source == ""  # no caption: no text


@pytest.mark.parametrize("announced", [True, False])
async def test_an_oversize_file_gets_one_clear_reply_and_is_never_downloaded(
    telegram: Start, fake: FakeBotAPI, announced: bool
) -> None:
    runtime = Scripted()
    async with telegram(runtime, attachment_max_bytes=1000) as served:
        big = fake.add_file(b"x" * 2500, "documents/big.bin", file_name="big.bin")
        if not announced:
            del big["file_size"]  # optional in an update: then getFile says it
        await served.deliver(file_update(PRIVATE, "look", document=big))
        assert fake.texts(PRIVATE) == [
            "⚠️ Invalid request: big.bin is 2.5 kB, over the limit of 1 kB per file. "
            "Nothing was sent to the agent."
        ]
        assert len(fake.calls_to("getFile")) == (0 if announced else 1)
        assert fake.downloads == [] and runtime.turns.empty() and runtime.keys == []


async def test_the_total_limit_covers_all_the_files_of_an_album(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted()
    settings = {"attachment_max_bytes": 1000, "attachment_max_total": 1500}
    async with telegram(runtime, telegram_media_group_wait=0.3, **settings) as served:
        for data in (b"a" * 800, b"b" * 800):
            await served.post(file_update(PRIVATE, group="album-2", photo=photo(fake, data)))
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(PRIVATE) == [
            "⚠️ Invalid request: the files come to 1.6 kB, over the limit of 1.5 kB per "
            "message. Nothing was sent to the agent."
        ]
        assert fake.downloads == [] and runtime.turns.empty()


async def test_a_file_the_bot_api_cannot_give_is_one_reply_without_the_token(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted()
    async with telegram(runtime) as served:
        document = fake.add_file(b"gone", "documents/gone.txt", file_name="gone.txt")
        fake.expired.add("documents/gone.txt")  # a file_path is valid for an hour only
        await served.deliver(file_update(PRIVATE, document=document))
        assert fake.texts(PRIVATE) == [
            "⚠️ Invalid request: gone.txt could not be downloaded from Telegram (HTTP 404). "
            "Nothing was sent to the agent."
        ]
        assert TOKEN not in fake.texts(PRIVATE)[0] and runtime.turns.empty()


async def test_a_photo_in_a_group_needs_the_bot_mentioned_in_its_caption(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path)
    async with telegram(runtime) as served:
        await served.deliver(file_update(GROUP, "nice view", photo=photo(fake, b"one")))
        mentioned = file_update(GROUP, "@gw_bot what is it?", photo=photo(fake, b"two"))
        mentioned["message"]["caption_entities"] = [{"type": "mention", "offset": 0, "length": 7}]
        await served.deliver(mentioned)
    [blocks] = prompts(record)
    assert blocks[0]["text"] == "what is it?" and decoded(blocks[1]) == b"two"
    assert len(fake.texts(GROUP)) == 1  # the photo without a mention got no reply
