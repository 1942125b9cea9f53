"""The Discord command list made from the live inventory, and an invocation read back as the
text the contract classifies.

Discord's rules for a chat input command: a name of 1-32 lower-case letters, digits, ``-``
or ``_`` (any script), a description of 1-100 characters, at most 25 options (required ones
first) and 100 commands. The umbrella command (``/agent``) comes first and takes any
command as text, or plain text (with a file, say); inventory names Discord refuses
(``skill:triage``, ``memory show``) stay reachable through it. Each command's arguments
are its options when the inventory types them and Discord can take their names; otherwise
one optional string option, ``arguments``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hikari import CommandOption, OptionType
from hikari.impl.special_endpoints import SlashCommandBuilder

from contract import Command, CommandArgument
from gateway.inventory import usage_hint

log = logging.getLogger("slashgate.discord")

MAX_COMMANDS = 100
MAX_OPTIONS = 25
MAX_DESCRIPTION = 100
ARGUMENTS = "arguments"  # the one string option of a command without typed arguments
TEXT = "command"  # the umbrella's option: the command and its arguments, as typed
PLAIN = "text"  # the umbrella's plain text: alone, a message; after a command, its arguments
FILE = "file"  # an optional attachment option of every command
_NAME = re.compile(r"[-_\w]{1,32}")
_TYPES = {"string": OptionType.STRING, "number": OptionType.FLOAT, "boolean": OptionType.BOOLEAN}

# A command as Discord lists it, to compare with what it has: name, description, options.
Shape = tuple[str, str, tuple[tuple[int, str, str, bool, bool], ...]]


def discord_name(name: str) -> str | None:
    """The name Discord would take for ``name`` (lower-cased), or None when it refuses it."""
    lowered = name.lower()
    return lowered if _NAME.fullmatch(lowered) else None


def _describe(text: str, fallback: str) -> str:
    text = " ".join(text.split()) or fallback
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def _file_option() -> CommandOption:
    return CommandOption(
        type=OptionType.ATTACHMENT, name=FILE, description="A file for the agent", is_required=False
    )


def _typed(arguments: Sequence[CommandArgument]) -> list[CommandOption] | None:
    """The inventory's typed arguments as options, or None when Discord cannot take them."""
    names = [discord_name(a.name) for a in arguments]
    required = [a.required for a in arguments]
    if (
        not arguments
        or None in names
        or len(set(names)) < len(names)
        or FILE in names
        or len(arguments) >= MAX_OPTIONS
        or required != sorted(required, reverse=True)  # Discord lists required ones first
    ):
        return None
    return [
        CommandOption(
            type=_TYPES[a.type],
            name=str(name),
            description=_describe(a.description or "", a.name),
            is_required=a.required,
        )
        for a, name in zip(arguments, names, strict=True)
    ]


def _options(command: Command) -> tuple[list[CommandOption], tuple[str, ...] | None]:
    """(options, the typed arguments' names in order, or None for the one string option)."""
    typed = _typed(command.arguments or ())
    if typed is not None:
        return [*typed, _file_option()], tuple(o.name for o in typed)
    hint = usage_hint(command.hint) or "arguments"
    text = CommandOption(
        type=OptionType.STRING,
        name=ARGUMENTS,
        description=_describe(hint, ARGUMENTS),
        is_required=False,
        autocomplete=True,
    )
    return [text, _file_option()], None


@dataclass(frozen=True)
class CommandList:
    """What to publish, and how to read an invocation back."""

    umbrella: str
    builders: tuple[SlashCommandBuilder, ...] = ()
    original: dict[str, str] = field(default_factory=dict)  # Discord name -> inventory name
    typed: dict[str, tuple[str, ...]] = field(default_factory=dict)  # its typed options
    refused: tuple[str, ...] = ()

    @classmethod
    def build(
        cls, inventory: Iterable[Command], umbrella: str, beside: CommandList | None = None
    ) -> CommandList:
        """The list for ``inventory``; ``beside`` a list Discord shows as well (the global
        one, in a guild): then only the commands it lacks, without the umbrella.
        """
        builders = [] if beside is not None else [_umbrella(umbrella)]
        taken = beside.original if beside is not None else {}
        original: dict[str, str] = {}
        typed: dict[str, tuple[str, ...]] = {}
        refused: list[str] = []
        for command in inventory:  # host commands first: they shadow runtime namesakes
            name = discord_name(command.name)
            if name is None:
                refused.append(command.name)
                continue
            if name == umbrella or name in original or name in taken:
                continue
            if len(builders) == MAX_COMMANDS:
                refused.append(command.name)
                continue
            options, names = _options(command)
            description = _describe(command.description, usage_hint(command.hint) or name)
            builders.append(
                SlashCommandBuilder(name=name, description=description, options=options)
            )
            original[name] = command.name
            if names is not None:
                typed[name] = names
        return cls(umbrella, tuple(builders), original, typed, tuple(refused))

    def beside(self, extra: CommandList) -> CommandList:
        """This list with ``extra``'s commands (built ``beside`` it): a guild's reading."""
        return CommandList(
            self.umbrella,
            self.builders + extra.builders,
            {**extra.original, **self.original},
            {**extra.typed, **self.typed},
            self.refused,
        )

    @property
    def shapes(self) -> tuple[Shape, ...]:
        return tuple(shape(b.name, b.description, b.options) for b in self.builders)

    def text(self, name: str, options: dict[str, Any]) -> str:
        """The text typed for an invocation of the Discord command ``name`` with ``options``
        (option name -> value). A name this list does not have (registered before the
        inventory changed) is read as typed: the contract then says it is unsupported.
        """
        if name == self.umbrella:
            typed = str(options.get(TEXT) or "")
            plain = str(options.get(PLAIN) or "")
            if not typed:  # plain text, or a file alone; nothing at all is an empty command
                return plain if plain or FILE in options else "/"
            typed = typed if typed.startswith("/") else "/" + typed
            return f"{typed} {plain}" if plain else typed
        command = self.original.get(name, name)
        names = self.typed.get(name)
        if names is None:
            values = [str(options.get(ARGUMENTS) or "")]
        else:
            values = [_value(options[n]) for n in names if n in options]
        arguments = " ".join(v for v in values if v)
        return f"/{command} {arguments}" if arguments else f"/{command}"


# The list to read an interaction from a channel of a guild (None: a DM) with (guilds.py).
CommandLists = Callable[[str, int | None], CommandList]


def _umbrella(umbrella: str) -> SlashCommandBuilder:
    text = CommandOption(
        type=OptionType.STRING,
        name=TEXT,
        description="The command and its arguments: deploy prod",
        is_required=False,
        autocomplete=True,
    )
    plain = CommandOption(
        type=OptionType.STRING,
        name=PLAIN,
        description="Plain text for the agent (after a command: its arguments)",
        is_required=False,
    )
    return SlashCommandBuilder(
        name=umbrella,
        description=f"Send a slash command or text to the agent: /{umbrella} deploy prod",
        options=[text, plain, _file_option()],
    )


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shape(name: str, description: str, options: Sequence[CommandOption] | None) -> Shape:
    return (
        name,
        description,
        tuple(
            (int(o.type), o.name, o.description, bool(o.is_required), bool(o.autocomplete))
            for o in options or ()
        ),
    )
