"""What anyone on the Matrix network may do to the bot does not make it deaf: a to-device
message of the wrong shape (the bot's device id is public, no room is needed) is dropped with
a log line, and the bot goes on answering; a bot whose logins were all ended ("log out of all
devices") and that has a password signs in again as the same device, its keys uploaded again.
"""

from __future__ import annotations

import secrets
from pathlib import Path as FilePath

import pytest
from mautrix.api import Method, Path
from mautrix.types import UserID
from pydantic import SecretStr

from .conftest import Start, channel_of
from .person import Person
from .synapse import Synapse

pytestmark = pytest.mark.xdist_group("matrix")


async def test_a_to_device_message_of_the_wrong_shape_does_not_stop_the_sync(
    matrix: Start, alice: Person, bot_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with matrix() as served:
        channel = channel_of(served)
        assert channel.crypto is not None and channel.sync is not None
        device, _ = channel.crypto.device
        bad = {"messages": {bot_id: {device: {"action": 5}}}}
        path = Path.v3.sendToDevice["m.room_key_request"][secrets.token_hex(8)]
        await alice.client.api.request(Method.PUT, path, bad)
        room = await alice.room_with(bot_id)
        asked = await alice.send(room, "/echo still listening")
        await alice.shows(room, asked, bot_id, "still listening")
        assert channel.sync.failing is None
    assert "a to-device m.room_key_request from " + alice.me + " was dropped" in caplog.text


async def test_a_password_bot_signs_in_again_after_its_logins_were_ended(
    matrix: Start, synapse: Synapse, alice: Person, tmp_path: FilePath
) -> None:
    # Another bot account: ending the logins of the session's bot would end its token too.
    bot = synapse.account("gw_relogin")
    password = {
        "matrix_access_token": None,
        "matrix_user_id": bot.user_id,
        "matrix_password": SecretStr(bot.password),
        "matrix_device_id": "RELOGIN",
        "matrix_crypto_path": tmp_path / "crypto.sqlite3",
    }
    async with matrix(**password) as served:
        channel = channel_of(served)
        assert channel.client is not None and channel.crypto is not None
        room = await alice.room_with(bot.user_id)
        first = await alice.send(room, "/echo before")
        await alice.shows(room, first, bot.user_id, "before")
        # "Log out of all devices": the token ends, and the device's keys with it.
        await channel.client.api.request(Method.POST, Path.v3.logout.all)
        after = await alice.send(room, "/echo after")
        await alice.shows(room, after, bot.user_id, "after")
        device, _ = channel.crypto.device
        keys = await alice.client.query_keys([UserID(bot.user_id)])
        assert device in keys.device_keys[UserID(bot.user_id)]  # others can encrypt for it
