"""What goes to a room, paced under the bot's limits (docs/rate-limits.md): messages, their
edits, reactions and redactions wait for the room's turn and the bot's budget; typing
notices are not paced (they put nothing in the room). In an encrypted room what is sent is
encrypted (redactions and typing notices are not: they carry no content).

A message is sent with a transaction id of its own, so a send tried again after a network
error is the same event to the homeserver, never a second message. The bot's messages and
their edits mention no one (``NO_MENTIONS``): without ``m.mentions`` the homeserver's legacy
rules would ping the room for an "@room" in the text, or a member whose name it has.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mautrix.api import Method, Path
from mautrix.client import ClientAPI
from mautrix.errors import MatrixError, MLimitExceeded
from mautrix.types import EventID, RoomID

from gateway.backoff import Backoff, retrying
from gateway.pacing import Pacer, Rate

from .crypto import Crypto
from .render import Chunk

log = logging.getLogger("slashgate.matrix")

NOTICE = "m.notice"
STATE = "state"  # the pacer lane of state events (room ids start with "!": no room's lane)
UNPACED = Rate(0)  # no lane limit: the bot's budget only
TYPING_TIMEOUT = 30_000  # ms: how long a typing notice shows unless sent again
NO_MENTIONS: dict[str, Any] = {"m.mentions": {}}


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reply goes: the room, the message it answers, and its thread (if it was in
    one)."""

    room_id: str
    event_id: str | None = None  # the user's message
    thread: str | None = None  # the thread root, when the user wrote in a thread

    @property
    def conversation(self) -> str:
        return self.room_id if self.thread is None else f"{self.room_id}|{self.thread}"

    @classmethod
    def of(cls, conversation: str, event_id: str | None = None) -> Target:
        """The target in ``conversation`` (what ``conversation`` made)."""
        room, _, thread = conversation.partition("|")
        return cls(room, event_id, thread or None)

    def relation(self) -> dict[str, Any]:
        """``m.relates_to`` of a reply: in the thread, else a reply to the user's message."""
        if self.thread is not None:
            relation: dict[str, Any] = {"rel_type": "m.thread", "event_id": self.thread}
            if self.event_id is not None:
                relation["is_falling_back"] = True
                relation["m.in_reply_to"] = {"event_id": self.event_id}
            return relation
        if self.event_id is None:
            return {}
        return {"m.in_reply_to": {"event_id": self.event_id}}

    def following(self) -> dict[str, Any]:
        """``m.relates_to`` of a reply's later messages: in the thread, else none."""
        if self.thread is None:
            return {}
        return {"rel_type": "m.thread", "event_id": self.thread, "is_falling_back": True}


def edit_content(original: str, chunk: Chunk) -> dict[str, Any]:
    """An edit (``m.replace``) of ``original`` to show ``chunk``."""
    new = chunk.content(NOTICE) | NO_MENTIONS
    return {
        "msgtype": NOTICE,
        "body": f"* {chunk.body}",
        "format": "org.matrix.custom.html",
        "formatted_body": f"* {chunk.html}",
        "m.new_content": new,
        "m.relates_to": {"rel_type": "m.replace", "event_id": original},
        **NO_MENTIONS,
    }


class Outbox:
    def __init__(
        self,
        client: ClientAPI,
        pacer: Pacer,
        room_rate: Rate,
        edit_interval: float,
        show_reasoning: bool,
        crypto: Crypto,
    ) -> None:
        self.client = client
        self.crypto = crypto
        self.pacer = pacer
        self.room_rate = room_rate
        self.edit_interval = edit_interval
        self.show_reasoning = show_reasoning

    @asynccontextmanager
    async def paced(self, room_id: str) -> AsyncIterator[None]:
        async with self.pacer.call(room_id, self.room_rate):
            yield

    @asynccontextmanager
    async def slot(self, room_id: str) -> AsyncIterator[None]:
        """A preview's slot (``Pacer.slot``): the text is made once it is had."""
        async with self.pacer.slot(room_id, self.room_rate):
            yield

    async def send(
        self, room_id: str, content: dict[str, Any], event_type: str = "m.room.message"
    ) -> EventID:
        """An event into the room (encrypted once, in an encrypted room), tried again after
        a 429 or a network error (the same transaction id each time).
        """
        event_type, content = await self.crypto.seal(room_id, event_type, content)
        path = Path.v3.rooms[RoomID(room_id)].send[event_type][secrets.token_urlsafe(12)]
        answer = await self._put(room_id, self.room_rate, None, path, content)
        return EventID(answer["event_id"])

    async def state(
        self, room_id: str, event_type: str, state_key: str, content: dict[str, Any]
    ) -> None:
        """A state event into the room (state is never encrypted), tried again as ``send``
        is: Synapse counts it against the bot's rate limit too. Under the bot's budget only,
        behind its messages: it shows nothing in the room, and a person's first reply in a
        room just joined does not wait for the room's commands.
        """
        path = Path.v3.rooms[RoomID(room_id)].state[event_type][state_key]
        await self._put(STATE, UNPACED, False, path, content)

    async def _put(
        self, lane: str, rate: Rate, urgent: bool | None, path: Any, content: dict[str, Any]
    ) -> Any:
        """``PUT path`` in its pacer lane, tried again after a 429 or a network error."""

        async def put() -> Any:
            async with self.pacer.call(lane, rate, urgent):
                return await self.client.api.request(Method.PUT, path, content)

        def transient(exc: Exception) -> str | None:
            if isinstance(exc, MLimitExceeded):  # the lane's next call waits the time asked
                self.pacer.pause(lane, (getattr(exc, "retry_after_ms", None) or 1000) / 1000)
                return "rate limited"
            return None if isinstance(exc, MatrixError) else f"sending failed: {exc!r}"

        return await retrying(put, transient, Backoff())

    async def notice(self, room_id: str, chunk: Chunk, relation: dict[str, Any]) -> EventID:
        content = chunk.content(NOTICE) | NO_MENTIONS
        if relation:
            content["m.relates_to"] = relation
        return await self.send(room_id, content)

    async def edit(self, room_id: str, original: str, chunk: Chunk) -> EventID:
        return await self.send(room_id, edit_content(original, chunk))

    async def react(self, room_id: str, event_id: str, key: str) -> EventID:
        relation = {"rel_type": "m.annotation", "event_id": event_id, "key": key}
        return await self.send(room_id, {"m.relates_to": relation}, "m.reaction")

    async def annotations(self, room_id: str, event_id: str) -> list[str]:
        """The ids of the bot's own annotations (reactions) on ``event_id``: encrypted ones
        too, so by sender, not by key; none when the homeserver does not answer.
        """
        path = Path.v1.rooms[RoomID(room_id)].relations[EventID(event_id)]["m.annotation"]
        try:
            found = await self.client.api.request(Method.GET, path)
        except (MatrixError, OSError) as exc:
            log.warning("the reactions on %s could not be read: %s", event_id, exc)
            return []
        me = str(self.client.mxid)
        return [
            str(e["event_id"])
            for e in found.get("chunk", [])
            if isinstance(e, dict) and e.get("sender") == me and "event_id" in e
        ]

    async def redact(self, room_id: str, event_id: str) -> None:
        try:
            async with self.paced(room_id):
                await self.client.redact(RoomID(room_id), EventID(event_id))
        except MatrixError as exc:
            log.warning("redacting %s failed: %s", event_id, exc)

    async def typing(self, room_id: str, on: bool) -> None:
        try:
            await self.client.set_typing(RoomID(room_id), TYPING_TIMEOUT if on else 0)
        except (MatrixError, OSError) as exc:  # a typing notice is best effort
            log.debug("typing notice refused: %s", exc)
