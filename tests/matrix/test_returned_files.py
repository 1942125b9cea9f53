"""Files the agent returns reach the room: uploaded to the homeserver, sent as ``m.image`` or
``m.file`` answering the user's message, downloadable by the person; a file over the limits
is named in a notice instead.
"""

from __future__ import annotations

import pytest
from mautrix.types import ContentURI

from contract import Command
from gateway.events import FileReturned, MessageDelta, MessageEnd
from tests.telegram.helpers import Scripted

from .conftest import Start
from .person import Person

pytestmark = pytest.mark.xdist_group("matrix")

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(200))


async def test_files_the_agent_returns_are_uploaded_and_one_over_the_limit_is_named(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    runtime = Scripted(Command(name="draw", description="Draw"))
    async with matrix(runtime, attachment_max_bytes=1000):
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/draw")
        turn = await runtime.next_turn()
        turn.emit(
            MessageDelta("Here they are."),
            FileReturned("chart.png", "image/png", PNG),
            FileReturned("notes.txt", "text/plain", b"the notes"),
            FileReturned("huge.bin", "application/octet-stream", b"x" * 5000),
            MessageEnd(),
        )
        await alice.shows(room, asked, bot_id, "Here they are.")
        replies = await alice.until(
            lambda: (r := alice.replies(room, asked, bot_id)) and len(r) == 4 and r
        )
        text, image, notes, refused = (r["content"] for r in replies)
        assert text["body"] == "Here they are."
        assert image["msgtype"] == "m.image"
        assert (image["body"], image["info"]) == (
            "chart.png",
            {"mimetype": "image/png", "size": len(PNG)},
        )
        assert notes["msgtype"] == "m.file"
        assert (notes["filename"], notes["info"]["mimetype"]) == ("notes.txt", "text/plain")
        # Through the authenticated media API, as the person's client fetches them.
        assert await alice.client.download_media(ContentURI(image["url"])) == PNG
        assert await alice.client.download_media(ContentURI(notes["url"])) == b"the notes"
        assert "huge.bin: it is 5 kB, over the limit of 1 kB per file" in refused["body"]
