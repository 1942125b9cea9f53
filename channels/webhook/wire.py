"""The webhook channel's wire format: request model and response bodies."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from contract import Classification, Command, ComposerInputMessage
from gateway.inbound import Reply


class MessageIn(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    conversation: str = Field(min_length=1, max_length=256)
    user: str = Field(min_length=1, max_length=256)
    text: str = Field(min_length=1)
    id: str | None = Field(default=None, max_length=256)


def describe_validation_error(exc: ValidationError) -> str:
    """One readable sentence per problem: ``text: Input should be a valid string``."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "body"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def classification_body(result: Classification) -> dict[str, Any]:
    return {"kind": result.kind, "command": result.command, "args": result.args}


def forwarded_body(forwarded: ComposerInputMessage | None) -> dict[str, Any] | None:
    return None if forwarded is None else forwarded.model_dump(mode="json", exclude_none=True)


def reply_body(reply: Reply | None) -> dict[str, Any] | None:
    if reply is None:
        return None
    return {"text": reply.text, "category": reply.category, "stop_reason": reply.stop_reason}


def command_body(command: Command) -> dict[str, Any]:
    return {
        "name": command.name,
        "description": command.description,
        "hint": command.hint,
        "arguments": None
        if command.arguments is None
        else [a.model_dump(mode="json") for a in command.arguments],
        "source": command.source,
    }


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}
