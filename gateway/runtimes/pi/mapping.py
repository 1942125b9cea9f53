"""Between the unified turn and pi's RPC JSON: the prompt and its images going in; commands,
usage, model and messages read back.
"""

from __future__ import annotations

import base64
from typing import Any

from contract import Command

from ...attachments import descriptors
from ...events import UsageReported
from ...inbound import Attachment
from ..base import Turn


def pi_message(turn: Turn, vision: bool) -> str:
    """The prompt text. A command goes by its canonical name: pi matches names case-sensitively
    and sends anything it does not know to the model. Files that do not go as images follow
    as descriptors (pi's prompt takes images only).
    """
    if turn.command is not None:
        text = f"/{turn.command} {turn.args}".rstrip()
    else:
        text = turn.message.payload.source
    others = [a for a in turn.attachments if not (vision and image(a))]
    return "\n\n".join(t for t in (text, descriptors(others)) if t)


def pi_images(turn: Turn, vision: bool) -> list[dict[str, str]]:
    """The turn's images in pi's ``ImageContent`` shape; none for a model without vision."""
    if not vision:
        return []
    return [
        {
            "type": "image",
            "data": base64.b64encode(a.data).decode("ascii"),
            "mimeType": a.media_type,
        }
        for a in turn.attachments
        if a.data is not None and image(a)
    ]


def image(item: Attachment) -> bool:
    return item.data is not None and item.media_type.startswith("image/")


def pi_commands(data: Any) -> tuple[Command, ...]:
    """``get_commands``: extension commands, prompt templates and skills (``skill:`` kept)."""
    entries = data.get("commands", []) if isinstance(data, dict) else []
    return tuple(
        Command(name=c["name"], description=c.get("description") or "")
        for c in entries
        if isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"]
    )


def text_of(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def pi_usage(message: dict[str, Any] | None) -> UsageReported | None:
    """An assistant message's ``usage`` (tokens, ``cost.total``); None when it has none. pi
    writes zeros for what the provider did not report: zero is "not reported" here.
    """
    data = (message or {}).get("usage")
    if not isinstance(data, dict):
        return None

    def number(value: Any) -> int | None:
        return int(value) if isinstance(value, int | float) and value > 0 else None

    cost = data.get("cost")
    total_cost = cost.get("total") if isinstance(cost, dict) else None
    usage = UsageReported(
        input_tokens=number(data.get("input")),
        output_tokens=number(data.get("output")),
        total_tokens=number(data.get("totalTokens")),
        cost=float(total_cost) if isinstance(total_cost, int | float) and total_cost > 0 else None,
    )
    return None if usage == UsageReported() else usage


def pi_model(state: dict[str, Any]) -> str | None:
    """``get_state``'s model as ``provider/id``."""
    model = state.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("id"), str):
        return None
    provider = model.get("provider")
    return f"{provider}/{model['id']}" if isinstance(provider, str) else model["id"]


def last_assistant(messages: Any) -> dict[str, Any] | None:
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            return message
    return None
