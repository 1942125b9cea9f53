"""Files the bot cannot take are said to be so, never dropped without a word: an address that
is not an mxc:// URL of the spec's form is not fetched at all (the bot's token goes with each
download), and an encrypted file whose hash cannot even be read is a file that could not be
decrypted.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Start, channel_of
from .person import Person

pytestmark = pytest.mark.xdist_group("matrix")


class Fetches:
    """The channel's HTTP session, the URLs it was asked for noted."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.urls: list[str] = []

    def get(self, url: str, **options: Any) -> Any:
        self.urls.append(url)
        return self.session.get(url, **options)


async def said(alice: Person, room: str, event: str, bot_id: str) -> str:
    """The bot's answer to ``event`` once it is final (it tells of a file not taken)."""
    told = await alice.reply(room, event, bot_id)
    shown = await alice.until(
        lambda: (
            (body := alice.shown(room, told["event_id"]).get("body", ""))
            and "Nothing was sent" in body
            and body
        )
    )
    return str(shown)


async def test_an_mxc_url_of_another_form_is_not_fetched(
    matrix: Start, alice: Person, bot_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with matrix() as served:
        files = channel_of(served).messages.files  # type: ignore[union-attr]
        fetches = Fetches(files.session)
        monkeypatch.setattr(files, "session", fetches)
        room = await alice.room_with(bot_id)
        # Dot segments a URL's normalisation would resolve: /_matrix/client/v1/media/config
        # (the homeserver's JSON as the person's "file"); a media id's own slash.
        for url in ("mxc://../config", "mxc://localhost/..", "mxc://localhost/a/b"):
            content = {"msgtype": "m.file", "body": "config.json", "url": url}
            sent = await alice.send_raw(room, "m.room.message", content)
            text = await said(alice, room, sent, bot_id)
            assert "config.json could not be downloaded" in text, (url, text)
            assert "not a valid mxc:// URL" in text
        assert fetches.urls == []
        # One of the right form is fetched as ever.
        mxc = str(await alice.client.upload_media(b"hi", mime_type="text/plain"))
        content = {"msgtype": "m.file", "body": "hi.txt", "url": mxc}
        sent = await alice.send_raw(room, "m.room.message", content)
        await alice.shows(room, sent, bot_id, "You sent hi.txt (text/plain, 2 bytes).")
        assert len(fetches.urls) == 1


async def test_an_encrypted_file_whose_hash_is_not_base64_could_not_be_decrypted(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    async with matrix():
        room = await alice.room_with(bot_id)
        mxc = str(await alice.client.upload_media(b"sealed bytes", mime_type="text/plain"))
        sealed = {
            "url": mxc,
            "key": {"k": "AAAA"},
            "iv": "AAAAAAAAAAAAAAAAAAAAAA",
            "hashes": {"sha256": "a"},
            "v": "v2",
        }
        content = {"msgtype": "m.file", "body": "s.txt", "file": sealed}
        sent = await alice.send_raw(room, "m.room.message", content)
        text = await said(alice, room, sent, bot_id)
        assert "s.txt could not be downloaded" in text and "could not be decrypted" in text, text
