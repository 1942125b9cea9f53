"""What anyone on the Matrix network may send the bot does not make it deaf: a to-device
message of the wrong shape (the bot's device id is public, no room is needed) is dropped with
a log line, and the bot goes on answering.
"""

from __future__ import annotations

import secrets

import pytest
from mautrix.api import Method, Path

from .conftest import Start, channel_of
from .person import Person

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
