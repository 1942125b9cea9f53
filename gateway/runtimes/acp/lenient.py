"""Agents' ``session/update`` notifications, read leniently.

The SDK validates each notification against its strict model and drops the whole of it, with an
ERROR and a traceback, for one field out of shape (claude-agent-acp 0.23 sends
``usage_update.used: null`` every turn). The gateway reads them itself instead: the transport
hands each ``session/update`` over as an extension notification (``LENIENT``), and
``read_update`` keeps what is valid. An optional field out of shape is dropped (its default); a
required count (``used``, ``size``) becomes unknown (None); an update without some other required
field, or of a kind this SDK does not know, is dropped whole.
"""

from __future__ import annotations

import asyncio
import functools
import typing
from dataclasses import dataclass
from typing import Any

from acp._transport import NdjsonTransport  # the SDK's stdio framing (pinned below 0.13)
from acp.schema import SessionNotification
from acp.task import MessageSender, TaskSupervisor
from pydantic import BaseModel, Field, ValidationError, create_model

SESSION_UPDATE = "session/update"
LENIENT = "slashgate/session_update"  # the extension method a session/update is handed over as

# Each update kind's model by its tag (``sessionUpdate``), from the SDK's own union.
_KINDS: dict[str, type[BaseModel]] = {
    typing.get_args(kind.model_fields["session_update"].annotation)[0]: kind
    for kind in typing.get_args(SessionNotification.model_fields["update"].annotation)
}


class UpdateTransport:
    """The agent's stdio in the SDK's framing, with every ``session/update`` handed over as the
    extension notification ``LENIENT`` (its params untouched), which the SDK does not validate.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks = TaskSupervisor(source="slashgate.acp.transport")
        self._inner = NdjsonTransport(reader, MessageSender(writer, self._tasks))

    async def send(self, message: dict[str, Any]) -> None:
        await self._inner.send(message)

    async def receive(self) -> dict[str, Any] | None:
        message = await self._inner.receive()
        if message is not None and message.get("method") == SESSION_UPDATE and "id" not in message:
            return {**message, "method": f"_{LENIENT}"}
        return message

    async def close(self) -> None:
        try:
            await self._inner.close()
        finally:
            await self._tasks.shutdown()


@dataclass(frozen=True, slots=True)
class ReadUpdate:
    """A notification as far as it could be read: ``update`` None when nothing of it is usable;
    ``faults`` names each field out of shape and why (never its value: it may be user text).
    """

    session_id: str | None
    update: Any
    faults: tuple[str, ...] = ()


def read_update(params: Any) -> ReadUpdate:
    try:
        notification = SessionNotification.model_validate(params)
    except ValidationError as exc:
        return _salvage(params, exc)
    return ReadUpdate(notification.session_id, notification.update)


def _salvage(params: Any, exc: ValidationError) -> ReadUpdate:
    errors = exc.errors(include_url=False, include_input=False)
    faults = tuple(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
    fields = params if isinstance(params, dict) else {}
    session_id, update = fields.get("sessionId"), fields.get("update")
    if not isinstance(session_id, str):
        return ReadUpdate(None, None, faults)
    tag = update.get("sessionUpdate") if isinstance(update, dict) else None
    kind = _KINDS.get(tag) if isinstance(tag, str) else None
    if kind is None or not isinstance(update, dict):
        return ReadUpdate(session_id, None, faults)
    # The update's own fields that are out of shape (the location is update, tag, field, ...).
    bad = {e["loc"][2] for e in errors if len(e["loc"]) > 2 and e["loc"][:2] == ("update", tag)}
    kept = {name: value for name, value in update.items() if name not in bad}
    try:
        return ReadUpdate(session_id, _lenient(kind).model_validate(kept), faults)
    except ValidationError:
        return ReadUpdate(session_id, None, faults)


@functools.cache  # one per update kind: a handful
def _lenient(kind: type[BaseModel]) -> type[BaseModel]:
    """``kind`` with its required counts optional (None: unknown); a subclass, so that the
    mapping's ``isinstance`` tests still hold.
    """
    counts: dict[str, Any] = {
        name: (field.annotation | None, Field(None, alias=field.alias))
        for name, field in kind.model_fields.items()
        if field.is_required() and field.annotation in (int, float)
    }
    return create_model(f"Lenient{kind.__name__}", __base__=kind, **counts)
