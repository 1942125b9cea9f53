"""The events a sync batch left out of a room: past the filter's hundred timeline events a
room's timeline comes ``limited``, its latest events only, with ``prev_batch`` where they
begin. What lies between that and the previous sync position (written while the gateway was
down, or a flood between two syncs) is read back from the room's ``/messages``, newest
first, and handed over oldest first, so that a command in it is answered as any other.

The reading is bounded: at most ``CAP`` events a room a batch (the oldest past that are left
out, with a log line), and it stops at the bot's join (``after``), as what came before it is
not for the bot. A room the bot joined since that position comes with its latest events
before the join, older than the position: nothing is read back for it. A request that fails
raises, and the batch comes again.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.types import RoomID

log = logging.getLogger("slashgate.matrix")

CAP = 1000  # events read back a room a batch
PAGE = 100  # events a request


async def missed(
    client: ClientAPI, room_id: str, start: str, stop: str, after: int
) -> list[dict[str, Any]]:
    """The events of ``room_id`` from the sync position ``stop`` to ``start`` (a limited
    timeline's ``prev_batch``), oldest first, the bot's own left out; back to ``after``
    (milliseconds, the homeserver's clock) at most: the older ones are the caller's to drop.
    """
    path = Path.v3.rooms[RoomID(room_id)].messages
    others = json.dumps({"not_senders": [str(client.mxid)]}, separators=(",", ":"))
    found: list[dict[str, Any]] = []
    token = start
    while True:
        # One more than the cap: whether it cut anything is then known without asking again.
        query = {
            "dir": "b",
            "from": token,
            "to": stop,
            "limit": str(min(PAGE, CAP + 1 - len(found))),
            "filter": others,
        }
        page = await client.api.request(Method.GET, path, query_params=query)
        chunk = [event for event in page.get("chunk", []) if isinstance(event, dict)]
        found.extend(chunk)
        end = page.get("end")
        if len(found) > CAP:
            log.warning(
                "%s: more than %d events since the last sync; the older ones are left out",
                room_id,
                CAP,
            )
            del found[CAP:]
            break
        if not chunk or not isinstance(end, str) or end == token:
            break
        if any(before(event, after) for event in chunk):
            break  # back before the bot's join
        token = end
    found.reverse()
    return found


def before(event: dict[str, Any], moment: int) -> bool:
    """Whether ``event`` was sent before ``moment`` (milliseconds, the homeserver's clock)."""
    stamp = event.get("origin_server_ts")
    return isinstance(stamp, int) and stamp < moment
