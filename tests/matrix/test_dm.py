"""A person's direct messages to the bot on a real Synapse: the bot joins when invited, and
answers as a notice replying to the message, with Markdown as HTML beside the plain text.
"""

from __future__ import annotations

import pytest
from mautrix.errors import MatrixError
from pydantic import SecretStr

from channels.matrix.channel import MatrixChannel
from tests.conftest import make_settings

from .conftest import BOT, Start
from .person import Person
from .synapse import Synapse

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


async def test_check_signs_in_with_the_credentials(
    matrix: Start, synapse: Synapse, bot_id: str
) -> None:
    async with matrix() as served:

        def channel(token: str) -> MatrixChannel:
            settings = make_settings(
                matrix_homeserver=synapse.url, matrix_access_token=SecretStr(token)
            )
            return MatrixChannel(served.gateway, settings)

        found = await channel(synapse.account(BOT).token).check()
        assert found.startswith(f"{bot_id} (device ")
        with pytest.raises(MatrixError, match="token"):
            await channel("not-a-token").check()
