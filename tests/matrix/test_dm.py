"""A person's direct messages to the bot on a real Synapse: the bot joins when invited, and
answers as a notice replying to the message, with Markdown as HTML beside the plain text.
"""

from __future__ import annotations

import pytest

from .conftest import Start
from .person import Person

pytestmark = pytest.mark.xdist_group("matrix")


async def test_a_direct_message_is_answered_as_a_reply(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    async with matrix():
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/echo **hello** there")
        [reply] = await alice.until(lambda: alice.replies(room, asked, bot_id))
        content = reply["content"]
        assert content["msgtype"] == "m.notice"
        assert content["body"] == "**hello** there"
        assert content["format"] == "org.matrix.custom.html"
        assert content["formatted_body"] == "<p><strong>hello</strong> there</p>"
