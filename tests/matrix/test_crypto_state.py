"""The crypto side of a sync applies each state event once: a batch handled again after a
failure brings its state again (a store write each), while a new event of the same member (a
leave, a new device's join) is applied. Why members are not loaded lazily: test_encrypted.py.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from mautrix.types import TrustState

from channels.matrix.crypto import Crypto

# The batches here carry no to-device message, device list or key count: no machine is asked.
NO_MACHINE = SimpleNamespace(send_keys_min_trust=TrustState.UNVERIFIED)


def batch(*events: dict[str, Any]) -> dict[str, Any]:
    return {"rooms": {"join": {"!r:hs": {"state": {"events": list(events)}}}}}


def member(event_id: str, membership: str) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "type": "m.room.member",
        "state_key": "@ann:hs",
        "sender": "@ann:hs",
        "content": {"membership": membership},
    }


async def test_a_state_event_is_applied_once_and_a_new_one_again() -> None:
    crypto = Crypto(None, None, NO_MACHINE)  # type: ignore[arg-type]  # no to-device, no keys
    applied: list[str] = []

    async def state(room_id: str, raw: dict[str, Any]) -> None:
        applied.append(raw["event_id"])

    crypto._state = state  # type: ignore[method-assign]  # what reaches the stores
    joined, left = member("$join", "join"), member("$leave", "leave")
    for _ in range(3):
        await crypto.step(batch(joined))
    await crypto.step(batch(joined, left))
    assert applied == ["$join", "$leave"]


async def test_an_event_that_failed_to_apply_is_applied_when_the_batch_comes_again() -> None:
    crypto = Crypto(None, None, NO_MACHINE)  # type: ignore[arg-type]
    tries: list[str] = []

    async def state(room_id: str, raw: dict[str, Any]) -> None:
        tries.append(raw["event_id"])
        if len(tries) == 1:
            raise OSError("the store did not answer")

    crypto._state = state  # type: ignore[method-assign]
    joined = member("$join", "join")
    try:
        await crypto.step(batch(joined))
    except OSError:
        pass
    await crypto.step(batch(joined))
    assert tries == ["$join", "$join"]
