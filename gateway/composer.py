"""composer_input as JSON, as runtimes and the wire get it: made straight from the contract's
node rows, once per use, rather than through pydantic's serializer (the same dicts).
"""

from __future__ import annotations

from typing import Any

from contract import ComposerInputMessage, ComposerInputPayload, Nodes

from .offload import THRESHOLD

# The last short payload dumped, with its dump: a turn's payload is dumped for the embedded
# runtime's handler, then for the webhook's answer, with no other turn in between as a rule;
# the answer takes the same dicts. Nobody changes them (the bot reads them, the answer
# encodes them). A long one is not kept: it would stay in memory until the next input.
_last: tuple[ComposerInputPayload, dict[str, Any]] | None = None


def payload_json(payload: ComposerInputPayload) -> dict[str, Any]:
    """``payload.model_dump(mode="json", exclude_none=True)``."""
    global _last
    last = _last  # one read: a worker thread may dump a long payload meanwhile
    if last is not None and last[0] is payload:
        return last[1]
    nodes = payload.nodes
    if nodes is None:
        return {"source": payload.source}
    if isinstance(nodes, Nodes):  # what the contract builds; no node has a None field
        dumped = {"source": payload.source, "nodes": nodes.dump()}
        if len(payload.source) < THRESHOLD:
            _last = (payload, dumped)
        return dumped
    return payload.model_dump(mode="json", exclude_none=True)


def message_json(message: ComposerInputMessage) -> dict[str, Any]:
    """``message.model_dump(mode="json", exclude_none=True)``."""
    return {"type": message.type, "mode": message.mode, "payload": payload_json(message.payload)}
