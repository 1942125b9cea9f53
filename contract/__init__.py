"""The slash contract shared by every channel: pure functions and models, no I/O."""

from .catalog import CATEGORIES, Catalog, Category, categorize
from .classify import RUNS, Classification, Kind, SlashContract
from .complete import Completion, CompletionItem, complete
from .inventory import CommandRegistry
from .models import (
    BranchNode,
    Command,
    CommandArgument,
    ComposerInputMessage,
    ComposerInputPayload,
    ComposerNode,
    FileNode,
    Nodes,
    SlashCommandNode,
    SymbolNode,
    TextNode,
)
from .utf16 import utf16_len, utf16_prefix, utf16_slice
from .validate import (
    STRICT_NAME,
    ComposerInputError,
    check_composer_input,
    composer_input_problems,
    strict_payload,
)

__all__ = [
    "CATEGORIES",
    "RUNS",
    "STRICT_NAME",
    "BranchNode",
    "Catalog",
    "Category",
    "Classification",
    "Command",
    "CommandArgument",
    "CommandRegistry",
    "Completion",
    "CompletionItem",
    "ComposerInputError",
    "ComposerInputMessage",
    "ComposerInputPayload",
    "ComposerNode",
    "FileNode",
    "Kind",
    "Nodes",
    "SlashCommandNode",
    "SlashContract",
    "SymbolNode",
    "TextNode",
    "categorize",
    "check_composer_input",
    "complete",
    "composer_input_problems",
    "strict_payload",
    "utf16_len",
    "utf16_prefix",
    "utf16_slice",
]
