"""Wire models of the contract: commands and the composer_input message."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

CommandSource = Literal["static", "dynamic", "runtime", "gateway"]


class CommandArgument(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type: Literal["string", "number", "boolean"] = "string"
    required: bool = False
    description: str | None = None


class Command(BaseModel):
    """One entry of a command inventory (RFC SlashCommandDefinition + ACP input.hint)."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    hint: str | None = None
    arguments: tuple[CommandArgument, ...] | None = None
    source: CommandSource = "runtime"


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str  # narrowed by each node type; declared here so that it serializes first
    start: int
    end: int
    raw: str


class TextNode(_Node):
    kind: Literal["text"] = "text"


class SlashCommandNode(_Node):
    kind: Literal["slash_command"] = "slash_command"
    name: str


class FileNode(_Node):
    kind: Literal["file"] = "file"
    path: str


class SymbolNode(_Node):
    kind: Literal["symbol"] = "symbol"
    name: str


class BranchNode(_Node):
    kind: Literal["branch"] = "branch"
    name: str


ComposerNode = Annotated[
    TextNode | SlashCommandNode | FileNode | SymbolNode | BranchNode,
    Field(discriminator="kind"),
]


class ComposerInputPayload(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    nodes: tuple[ComposerNode, ...] | None = None


class ComposerInputMessage(BaseModel):
    """The typed inbox message forwarded to a runtime."""

    model_config = ConfigDict(frozen=True)

    type: Literal["composer_input"] = "composer_input"
    mode: Literal["immediate", "queued", "paused", "steer"] = "immediate"
    payload: ComposerInputPayload
