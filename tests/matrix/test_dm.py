"""A person's direct messages to the bot on a real Synapse: the bot joins when invited, and
answers as a notice replying to the message, with Markdown as HTML beside the plain text; a
reply's own text reaches the agent whole, only an older client's quoted fallback taken off.
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


async def test_a_reply_keeps_its_quotes_and_loses_only_the_quoted_fallback(
    matrix: Start, alice: Person, bot_id: str
) -> None:
    async with matrix():
        room = await alice.room_with(bot_id)
        first = await alice.send(room, "hello")
        await alice.reply(room, first, bot_id)
        reply_to = {"m.relates_to": {"m.in_reply_to": {"event_id": first}}}
        # Current clients send no fallback (the spec dropped it in v1.13): a Markdown quote
        # the person wrote is their text, also when it is all of it.
        mixed = await alice.send(room, "> quoted line\n\nmy question", **reply_to)
        only = await alice.send(room, "> just a quote", **reply_to)
        # An older client's fallback: the replied-to message quoted under its sender's id.
        older = f"> <{alice.me}> hello\n> more of it\n\n/echo the answer"
        fallback = await alice.send(room, older, **reply_to)

        def says(event: str, *words: str) -> bool:
            return any(
                all(w in alice.shown(room, r["event_id"]).get("body", "") for w in words)
                for r in alice.replies(room, event, bot_id)
            )

        await alice.until(lambda: says(mixed, "quoted line", "my question"))
        await alice.until(lambda: says(only, "just a quote"))
        await alice.shows(room, fallback, bot_id, "the answer")


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
