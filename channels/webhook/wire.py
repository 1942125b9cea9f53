"""The webhook channel's wire format: the request model, the response models the handlers
build their bodies with, and the server-sent event payloads. ``/openapi.json`` is generated
from these same models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_serializer,
    model_validator,
)

from contract import Category, Classification, Command, Completion, ComposerInputMessage
from contract.classify import Kind
from gateway.api import (
    AgentInfo,
    Outcome,
    PermissionOption,
    PlanEntry,
    Reply,
    Status,
    UsageReported,
)
from gateway.composer import message_json
from gateway.validation import describe_validation_error as describe_errors

from .events import usage_body


class AttachmentIn(BaseModel):
    """A file in a JSON body: its bytes in base64 (``data``), or a ``url`` to fetch."""

    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1, max_length=256)
    media_type: str | None = Field(default=None, max_length=256)
    data: str | None = None
    url: str | None = Field(default=None, max_length=4096)

    @model_validator(mode="after")
    def _one_source(self) -> AttachmentIn:
        if (self.data is None) == (self.url is None):
            raise ValueError("an attachment has either data (base64) or url")
        return self


class MessageIn(BaseModel):
    """One input: the text a user typed in a conversation, and the files that came with it."""

    model_config = ConfigDict(strict=True, extra="ignore")

    conversation: str = Field(min_length=1, max_length=256)
    user: str = Field(min_length=1, max_length=256)
    text: str = ""
    id: str | None = Field(default=None, max_length=256)
    # A factory, not ``= []``: pydantic deep-copies a mutable default for every request.
    attachments: list[AttachmentIn] = Field(default_factory=list, json_schema_extra={"default": []})

    @model_validator(mode="after")
    def _something_to_send(self, info: ValidationInfo) -> MessageIn:
        # A multipart form's files arrive apart from its fields: counted in the context.
        uploaded = (info.context or {}).get("files", 0)
        if not self.text and not self.attachments and not uploaded:
            raise ValueError("text must not be empty (unless files are attached)")
        return self


class ClassificationOut(BaseModel):
    """What the slash contract made of the text."""

    kind: Kind
    command: str | None
    args: str


class ReplyOut(BaseModel):
    """The one final reply: Markdown ``text``; ``category`` null on success; ``usage`` only
    when the runtime reported it.
    """

    text: str
    category: Category | None
    stop_reason: str | None
    usage: UsageReported | None = None


class AcceptedEvent(BaseModel):
    """SSE ``accepted``: always the first event, also for rejected input."""

    conversation: str
    classification: ClassificationOut
    forwarded: ComposerInputMessage | None = Field(
        description="What went to the runtime; null when nothing did."
    )

    @field_serializer("forwarded")
    def _forwarded(self, value: ComposerInputMessage | None) -> dict[str, Any] | None:
        return forwarded_body(value)


class MessageOut(AcceptedEvent):
    """The answer to ``POST /v1/messages`` (and the SSE ``reply`` event)."""

    reply: ReplyOut | None = Field(
        description="Null when the input was dropped (addressed to another bot)."
    )


class DeltaEvent(BaseModel):
    """SSE ``delta``: a chunk of the reply's Markdown as the runtime streams it."""

    text: str


class ToolEvent(BaseModel):
    """SSE ``tool``: a tool call started, running or ended."""

    type: Literal["ToolStart", "ToolRunning", "ToolEnd"]
    tool_id: str
    title: str | None = None
    kind: str | None = None
    detail: str | None = None
    status: Literal["completed", "failed"] | None = None
    output: str | None = None


class PermissionEvent(BaseModel):
    """SSE ``permission``: the runtime asks before acting."""

    request_id: str
    title: str
    options: list[PermissionOption]


class StatusEvent(BaseModel):
    """SSE ``status``: the runtime's state changed."""

    status: Status
    detail: str | None = None


class PlanEvent(BaseModel):
    """SSE ``plan``: the agent's whole current plan (entries, or Markdown ``text``)."""

    entries: list[PlanEntry]
    text: str | None = None


class ReasoningEvent(BaseModel):
    """SSE ``reasoning``: a chunk of the agent's reasoning (unless ``show_reasoning = "off"``)."""

    text: str


# A pydantic model or a dataclass per event (``usage`` is the core's own ``UsageReported``).
SSE_EVENTS: dict[str, type[Any]] = {
    "accepted": AcceptedEvent,
    "delta": DeltaEvent,
    "tool": ToolEvent,
    "permission": PermissionEvent,
    "status": StatusEvent,
    "plan": PlanEvent,
    "reasoning": ReasoningEvent,
    "usage": UsageReported,
    "reply": MessageOut,
}


class CommandsOut(BaseModel):
    """The effective inventory: gateway commands first, then the runtime's."""

    commands: list[Command]
    interactive_only: list[str]


def describe_validation_error(exc: ValidationError) -> str:
    """One readable sentence per problem: ``text: Input should be a valid string``."""
    return describe_errors(exc, root="body")


# The bodies below are the response models' dumps, built directly: they are made for every
# answer, and the models stay what ``/openapi.json`` documents.


def classification_body(result: Classification) -> dict[str, Any]:
    return {"kind": result.kind, "command": result.command, "args": result.args}


def forwarded_body(forwarded: ComposerInputMessage | None) -> dict[str, Any] | None:
    return None if forwarded is None else message_json(forwarded)


def reply_body(reply: Reply | None) -> dict[str, Any] | None:
    """A ``ReplyOut``: ``usage`` only when the runtime reported it."""
    if reply is None:
        return None
    body: dict[str, Any] = {
        "text": reply.text,
        "category": reply.category,
        "stop_reason": reply.stop_reason,
    }
    if reply.usage is not None:
        body["usage"] = usage_body(reply.usage)
    return body


def accepted_body(
    conversation: str, classification: Classification, forwarded: ComposerInputMessage | None
) -> dict[str, Any]:
    """An ``AcceptedEvent``."""
    return {
        "conversation": conversation,
        "classification": classification_body(classification),
        "forwarded": forwarded_body(forwarded),
    }


def outcome_body(conversation: str, outcome: Outcome) -> dict[str, Any]:
    """A ``MessageOut``."""
    return {
        "conversation": conversation,
        "classification": classification_body(outcome.classification),
        "forwarded": forwarded_body(outcome.forwarded),
        "reply": reply_body(outcome.reply),
    }


class AgentOut(BaseModel):
    """``GET /v1/agent``: who answers, for a greeting."""

    name: str = Field(description="The agent's (the bot's) own name")
    runtime: str = Field(description="How the gateway reaches it: embedded, acp, pi, electric...")
    version: str | None = Field(description="The version it gave, where it gives one")
    description: str = Field(description="What it says of itself; empty when nothing")


def agent_body(agent: AgentInfo) -> dict[str, Any]:
    return AgentOut(
        name=agent.name,
        runtime=agent.runtime,
        version=agent.version,
        description=agent.description,
    ).model_dump(mode="json")


def commands_body(commands: tuple[Command, ...], interactive_only: list[str]) -> dict[str, Any]:
    return CommandsOut(
        commands=list(commands), interactive_only=sorted(interactive_only)
    ).model_dump(mode="json")


class CommandsQuery(BaseModel):
    """``GET /v1/commands`` query: ``user``, whose owner-only commands are left out unless
    they are an owner (docs/access.md).
    """

    model_config = ConfigDict(extra="ignore")

    conversation: str | None = Field(default=None, min_length=1, max_length=256)
    user: str | None = Field(default=None, min_length=1, max_length=256)


class CompleteQuery(CommandsQuery):
    """``GET /v1/complete`` query: ``cursor`` in UTF-16 code units, the end when left out."""

    text: str = ""
    cursor: int | None = Field(default=None, ge=0)
    limit: int = Field(default=50, ge=1, le=200)


class ClassifyIn(BaseModel):
    """``POST /v1/classify``: the text a conversation would send."""

    model_config = ConfigDict(strict=True, extra="ignore")

    conversation: str = Field(min_length=1, max_length=256)
    text: str = Field(min_length=1)


def preview_body(conversation: str, outcome: Outcome) -> dict[str, Any]:
    """``/v1/classify``: everything the contract decided, and what would be sent or replied."""
    result = outcome.classification
    return {
        "conversation": conversation,
        "classification": {
            **classification_body(result),
            "typed": result.typed,
            "source": result.source,
            "for_other_bot": result.for_other_bot,
        },
        "payload": result.payload.model_dump(mode="json", exclude_none=True),
        "forwarded": forwarded_body(outcome.forwarded),
        "rejection": reply_body(outcome.reply),
    }


def completion_body(conversation: str | None, completion: Completion) -> dict[str, Any]:
    return {"conversation": conversation, **completion.model_dump(mode="json")}
