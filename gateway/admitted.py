"""What routing admits for the runtime: one value from the busy policy to the run stage."""

from __future__ import annotations

from dataclasses import dataclass

from contract import Classification, ComposerInputMessage

from .arrivals import Place
from .conversation import Conversation
from .inbound import InboundMessage, ReplySink
from .state import Entry


@dataclass(slots=True)
class Admitted:
    """An input that routing sends to the runtime, once the busy policy lets it run."""

    conv: Conversation
    message: InboundMessage
    sink: ReplySink
    entry: Entry | None
    place: Place  # its place in the conversation's arrival order, until it queued
    result: Classification
    forwarded: ComposerInputMessage  # what the runtime gets
    name: str | None  # the command as the user typed it (None: plain text)
    agent_name: str | None  # the command as the agent knows it
    hooks: frozenset[str]  # the sink's hooks (``delivery.hooks``)
