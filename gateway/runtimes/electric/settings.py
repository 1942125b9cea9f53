"""The Electric runtime's settings (``[electric]``, ``SLASHGATE_ELECTRIC_*``), with
``runtime = "electric"``.
"""

from __future__ import annotations

from typing import Literal

from ...settings import CoreSettings


class ElectricSettings(CoreSettings):
    # An Electric Agents server over HTTP.
    electric_url: str = "http://127.0.0.1:4437"
    """With `runtime = "electric"`: the Electric Agents server."""
    electric_entity_type: str = "assistant"
    """The entity type of each conversation's entity."""
    electric_id_prefix: str = "slashgate"
    """Start of every entity id (`[A-Za-z0-9][A-Za-z0-9._-]*`)."""
    electric_principal: str | None = None
    """`Electric-Principal` of the gateway itself: `<user|agent|service|system>:<id>`."""
    electric_live: Literal["sse", "long-poll"] = "sse"
    """How the stream is followed once caught up: `sse` or `long-poll`."""
