"""Wire formats of the Electric Agents server, as read in its source (packages/agents-server)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from contract import Command, CommandArgument

from ...inventory import arguments_hint

# Codes (electric-agents-types.ts, process-wake.ts) that the runtime treats specially.
DUPLICATE_URL = "DUPLICATE_URL"
FORK_IN_PROGRESS = "FORK_IN_PROGRESS"
HANDLER_FAILED = "HANDLER_FAILED"  # an error row: the handler threw, its run may stay open
BAD_RESPONSE = "BAD_RESPONSE"  # ours: a 2xx answer that is not what the server's code sends


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Streams(_Lenient):
    main: str


class Entity(_Lenient):
    """``toPublicEntity``: what PUT (201) and GET return for an entity."""

    url: str
    type: str | None = None
    status: str = "idle"
    streams: Streams
    tags: dict[str, str] = {}


class SlashCommandArgument(_Lenient):
    name: str
    type: Literal["string", "number", "boolean"] = "string"
    required: bool | None = None
    description: str | None = None


class SlashCommand(_Lenient):
    """A type's static declaration, or a ``slash_command`` row of an entity stream."""

    name: str
    description: str | None = None
    arguments: list[SlashCommandArgument] | None = None
    source: Literal["static", "dynamic"] = "static"

    def command(self) -> Command:
        arguments = tuple(
            CommandArgument(
                name=a.name, type=a.type, required=bool(a.required), description=a.description
            )
            for a in self.arguments or ()
        )
        return Command(
            name=self.name,
            description=self.description or "",
            hint=arguments_hint(arguments),
            arguments=arguments if self.arguments is not None else None,
            source=self.source,
        )


class EntityType(_Lenient):
    name: str
    description: str = ""
    slash_commands: list[SlashCommand] | None = None


class ErrorDetail(_Lenient):
    path: str = "/"
    message: str = ""


class ErrorInfo(_Lenient):
    code: str = ""
    message: str = ""
    details: list[ErrorDetail] | Any = None


class ErrorBody(_Lenient):
    """``apiError``: ``{"error": {code, message, details?}}``."""

    error: ErrorInfo


def parse_slash_command(value: Any) -> SlashCommand | None:
    """A stream row, or None when it is malformed (a bad row must not stop the reader)."""
    try:
        return SlashCommand.model_validate(value)
    except ValidationError:
        return None


class ElectricError(Exception):
    """A refused request: HTTP status and the server's ``{code, message, details}``."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details

    @classmethod
    def from_response(cls, status: int, body: bytes) -> ElectricError:
        try:
            info = ErrorBody.model_validate_json(body).error
        except ValidationError:
            # Not an agents-server body: the streams server answers in plain text (worth
            # showing), a proxy may answer an HTML page (not worth showing).
            text = body.decode("utf-8", "replace").strip()
            plain = text and len(text) <= 200 and "\n" not in text and not text.startswith("<")
            return cls(status, "", f"HTTP {status}: {text}" if plain else f"HTTP {status}")
        return cls(status, info.code, info.message or f"HTTP {status}", info.details)

    def describe(self) -> str:
        """The server's message with its validation details, for the user."""
        details = self.details if isinstance(self.details, list) else []
        found = [f"{d.path} {d.message}".strip() for d in details if isinstance(d, ErrorDetail)]
        return f"{self.message}: {'; '.join(found)}" if found else self.message

    def __str__(self) -> str:
        code = f" {self.code}" if self.code else ""
        return f"HTTP {self.status}{code}: {self.describe()}"
