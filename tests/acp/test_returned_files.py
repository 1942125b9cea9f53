"""An agent's images and embedded files in its message become files for the user."""

from __future__ import annotations

import base64

from acp.schema import (
    AgentMessageChunk,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    TextResourceContents,
)

from gateway.events import FileReturned
from gateway.runtimes.acp.mapping import turn_events

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(50))


def chunk(content: object) -> AgentMessageChunk:
    return AgentMessageChunk(session_update="agent_message_chunk", content=content)  # type: ignore[arg-type]


def test_an_image_becomes_a_file_named_by_its_type() -> None:
    image = ImageContentBlock(
        type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"
    )
    assert turn_events(chunk(image)) == [FileReturned("image.png", "image/png", PNG)]


def test_an_embedded_blob_becomes_a_file_named_by_its_uri() -> None:
    blob = BlobResourceContents(
        blob=base64.b64encode(b"%PDF-1.7").decode(),
        mime_type="application/pdf",
        uri="file:///work/out/report.pdf",
    )
    resource = EmbeddedResourceContentBlock(type="resource", resource=blob)
    assert turn_events(chunk(resource)) == [
        FileReturned("report.pdf", "application/pdf", b"%PDF-1.7")
    ]


def test_an_embedded_text_or_a_blob_that_is_not_base64_is_no_file() -> None:
    text = TextResourceContents(text="hello", uri="file:///a.txt")
    broken = BlobResourceContents(blob="not base64!", uri="file:///b.bin")
    for resource in (text, broken):
        block = EmbeddedResourceContentBlock(type="resource", resource=resource)
        assert turn_events(chunk(block)) == []
