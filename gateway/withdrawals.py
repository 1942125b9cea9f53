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

log = logging.getLogger("slashgate.core")

Key = tuple[str, str, str]  # channel, message id, sender


class Withdrawals:
    """``places``: the inputs that may be withdrawn, by (channel, message id, sender),
    written in place by the one owner of an input's life (gateway/answering.py) with no call
    here: every input with a message id passes there.
    """

    def __init__(self) -> None:
        self.places: dict[Key, Place] = {}

    def withdraw(self, channel: str, message_id: str, user: str) -> str | None:
        """Withdraw the input ``message_id`` that ``user`` sent in ``channel``, if its turn
        has not started: the id of the conversation it was in; None when there is no such
        input waiting (never handed in, someone else's, running, answered, withdrawn).
        """
        place = self.places.get((channel, message_id, user))
        if place is None or place.started or place.withdrawn:
            return None
        if place.queue is not None:
            conv, waiter = place.queue
            if not conv.withdraw(waiter):  # the slot came to it: it runs
                return None
        place.withdrawn = True
        del self.places[(channel, message_id, user)]  # free for an input that replaces it
        log.info("input %s withdrawn in %s", message_id, place.key)
        return place.key.removeprefix(f"{channel}:")
