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


async def test_an_encrypted_room_gets_one_notice_not_silence(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    encryption = {"type": "m.room.encryption", "content": {"algorithm": "m.megolm.v1.aes-sha2"}}
    sealed = {
        "algorithm": "m.megolm.v1.aes-sha2",
        "ciphertext": "AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg",
        "sender_key": "sender",
        "session_id": "session",
        "device_id": "DEVICE",
    }
    async with matrix():
        room = await alice.room_with(bot_id, initial_state=[encryption])
        first = await alice.send_raw(room, "m.room.encrypted", sealed)
        notice = await alice.reply(room, first, bot_id)
        assert "cannot read encrypted messages" in notice["content"]["body"]
        second = await alice.send_raw(room, "m.room.encrypted", sealed)
        barrier = await alice.send(room, "/echo after")
        await alice.shows(room, barrier, bot_id, "after")
        assert alice.replies(room, second, bot_id) == []  # told once, not at every message


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
