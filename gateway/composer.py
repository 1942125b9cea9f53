"""composer_input as JSON, as runtimes and the wire get it: made straight from the contract's
node rows, once per use, rather than through pydantic's serializer (the same dicts).
"""

from __future__ import annotations

from typing import Any

from contract import ComposerInputMessage, ComposerInputPayload, Nodes


def payload_json(payload: ComposerInputPayload) -> dict[str, Any]:
    """``payload.model_dump(mode="json", exclude_none=True)``."""
    nodes = payload.nodes
    if nodes is None:
        return {"source": payload.source}
    if isinstance(nodes, Nodes):  # what the contract builds; no node has a None field
        return {"source": payload.source, "nodes": nodes.dump()}
    return payload.model_dump(mode="json", exclude_none=True)


def message_json(message: ComposerInputMessage) -> dict[str, Any]:
    """``message.model_dump(mode="json", exclude_none=True)``."""
    return {"type": message.type, "mode": message.mode, "payload": payload_json(message.payload)}
