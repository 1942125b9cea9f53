"""Files the agent returns reach the room: uploaded to the homeserver, sent as ``m.image`` or
``m.file`` answering the user's message, downloadable by the person; a file over the limits
is named in a notice instead. The bot's messages mention no one (an empty ``m.mentions``): a
file named "@room …", or after a member, pings no one.
"""

from __future__ import annotations

from typing import Any

import pytest
from mautrix.api import Method, Path
from mautrix.errors import MTooLarge
from mautrix.types import ContentURI

from channels.matrix.outbox import Target
from channels.matrix.render import Chunk
from channels.matrix.returned import Returned, send_files
from contract import Command
from gateway.events import FileReturned, MessageDelta, MessageEnd
from tests.conftest import make_settings
from tests.telegram.helpers import Scripted

from .conftest import Start
from .person import Person
from .test_rooms import bob, group_room

__all__ = ["bob"]

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


async def test_the_files_and_notices_of_the_bot_ping_no_one(
    matrix: Start, alice: Person, bob: Person, bot_id: str
) -> None:
    runtime = Scripted(Command(name="export", description="Export"))
    async with matrix(runtime):
        # A moderator may notify the whole room ("@room"), as the composer's commands need.
        levels = {"users": {bot_id: 50}}  # room v12: the creator is not listed
        room = await group_room(alice, bob, bot=bot_id, power_level_override=levels)
        asked = await alice.send(room, "/export", **{"m.mentions": {"user_ids": [bot_id]}})
        turn = await runtime.next_turn()
        turn.emit(
            MessageDelta("Here, @room and bob."),
            FileReturned("@room read this.txt", "text/plain", b"hello"),
            FileReturned("bob.txt", "text/plain", b"hello"),
            MessageEnd(),
        )
        replies = await alice.until(
            lambda: (r := alice.replies(room, asked, bot_id)) and len(r) == 3 and r
        )
        await alice.shows(room, asked, bot_id, "Here, @room and bob.")
        edits = alice.edits(room, replies[0]["event_id"])
        for event in replies + edits:
            assert event["content"]["m.mentions"] == {}, event["content"]
        for edit in edits:
            assert edit["content"]["m.new_content"]["m.mentions"] == {}
        # Bob's notifications are counted as the events come to him: his sync has them all.
        await bob.until(
            lambda: len(bob.timeline(room, bot_id)) >= len(alice.timeline(room, bot_id))
        )
        found = await bob.client.api.request(Method.GET, Path.v3.notifications)
        pinged = [n for n in found["notifications"] if n["event"]["sender"] == bot_id]
        assert pinged  # a file is a message as others (an unread one)...
        assert [n["actions"] for n in pinged if highlighted(n)] == []  # ...and no ping


def highlighted(notification: dict[str, Any]) -> bool:
    """Whether a push rule called the event to its reader's attention (a mention's ping)."""
    return any(
        isinstance(a, dict) and a.get("set_tweak") == "highlight" and a.get("value", True)
        for a in notification["actions"]
    )


class RefusingHomeserver:
    """An outbox whose homeserver takes no upload (Synapse's ``max_upload_size``)."""

    def __init__(self) -> None:
        self.client = self
        self.crypto = self  # a room without encryption
        self.sent: list[dict[str, Any]] = []
        self.notices: list[tuple[str, dict[str, Any]]] = []

    async def encrypted(self, room_id: str) -> bool:
        return False

    async def upload_media(self, data: bytes, *args: Any) -> str:
        raise MTooLarge(413, "Upload request body is too large")

    async def send(self, room_id: str, content: dict[str, Any]) -> str:
        self.sent.append(content)
        return "$sent"

    async def notice(self, room_id: str, chunk: Chunk, relation: dict[str, Any]) -> str:
        self.notices.append((chunk.body, relation))
        return "$notice"


async def test_a_file_the_homeserver_refuses_is_named_in_the_notice() -> None:
    outbox = RefusingHomeserver()
    target = Target("!room:localhost", "$asked", thread="$root")
    returned = Returned(make_settings())
    returned.add(FileReturned("scan.pdf", "application/pdf", b"%PDF-1.7"))
    await send_files(outbox, target, returned)  # type: ignore[arg-type]
    assert outbox.sent == []
    [(body, relation)] = outbox.notices
    assert "scan.pdf: the homeserver did not take it (Upload request body is too large)" in body
    assert relation == target.relation()  # in the thread, as the reply's text


def test_the_limits_apply_as_the_files_arrive_and_keep_no_bytes_of_one_over_them() -> None:
    returned = Returned(make_settings(attachment_max_bytes=1000, attachment_max_total=1500))
    for name, size in (("a.bin", 800), ("huge.bin", 5000), ("b.bin", 800), ("c.bin", 600)):
        returned.add(FileReturned(name, "application/octet-stream", b"x" * size))
    assert [f.name for f in returned.kept] == ["a.bin", "c.bin"]  # the bytes held: 1.4 kB
    assert returned.refused == [
        ("huge.bin", "it is 5 kB, over the limit of 1 kB per file"),
        ("b.bin", "with it the files come to more than the limit of 1.5 kB per message"),
    ]
