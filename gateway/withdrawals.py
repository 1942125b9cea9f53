"""Withdrawals: an input its channel takes back before its turn (the person deleted or edited
the message while it waited). From when the gateway has an input with a message id until its
turn starts, the input's place (``arrivals.Place``) is known here by its channel, message id
and sender; ``withdraw`` marks it, and takes it out of its conversation's run queue when it
waits there. A withdrawn input never reaches the runtime and gets no reply: the busy stage
lets it go when it comes there (gateway/busy.py), as intake does after a wait for its
session; its journal entry ends as any input's (gateway/answering.py). One dict entry per
input on its way is all it costs the inputs that are not withdrawn.
"""

from __future__ import annotations

import logging

from .arrivals import Place
from .inbound import InboundMessage

log = logging.getLogger("slashgate.core")

Key = tuple[str, str, str]  # channel, message id, sender


class Withdrawals:
    def __init__(self) -> None:
        self._places: dict[Key, Place] = {}

    def arrive(self, message: InboundMessage, place: Place) -> Key | None:
        """``message`` may be withdrawn until its turn starts: its key, to ``leave`` with
        (None for an input without a message id, which cannot be named).
        """
        if message.message_id is None:
            return None
        key = (message.channel, message.message_id, message.user)
        self._places[key] = place
        return key

    def leave(self, key: Key, place: Place) -> None:
        """``place``'s input is over (answered, refused, withdrawn)."""
        other = self._places.pop(key, None)
        if other is not None and other is not place:  # one with the same id came after it
            self._places[key] = other

    def withdraw(self, channel: str, message_id: str, user: str) -> str | None:
        """Withdraw the input ``message_id`` that ``user`` sent in ``channel``, if its turn
        has not started: the id of the conversation it was in; None when there is no such
        input waiting (never handed in, someone else's, running, answered, withdrawn).
        """
        place = self._places.get((channel, message_id, user))
        if place is None or place.started or place.withdrawn:
            return None
        if place.queue is not None:
            conv, waiter = place.queue
            if not conv.withdraw(waiter):  # the slot came to it: it runs
                return None
        place.withdrawn = True
        del self._places[(channel, message_id, user)]  # free for an input that replaces it
        log.info("input %s withdrawn in %s", message_id, place.key)
        return place.key.removeprefix(f"{channel}:")
