"""What a conversation's entity (``ElectricSession``) needs of the runtime that opened it: the
server, the store, the entity type and its command list. A Protocol, so that the session does
not import the runtime.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from contract import Command

from ...state import StateStore
from .client import ElectricClient
from .failures import StreamFailures
from .stream import LiveMode


class Declares(Protocol):
    """An open conversation, told when the entity type's command list changes."""

    def declare(self, static: tuple[Command, ...]) -> None: ...


class EntityHost(Protocol):
    prefix: str  # starts every entity id
    entity_type: str
    live: LiveMode  # how a stream is followed
    client: ElectricClient
    store: StateStore  # stream positions, inventories and generations
    static: tuple[Command, ...] | None  # the type's command list, as last read
    sessions: weakref.WeakSet[Declares]  # the open conversations
    failures: StreamFailures  # the streams that cannot be read, logged once

    def generation_key(self, key: str) -> str:
        """The store's key of a conversation's generation (the count of its ``/new``)."""
        ...

    async def declared(self, fresh: bool = False) -> tuple[Command, ...] | None:
        """The type's command list, read again when ``fresh`` or once it is old."""
        ...
