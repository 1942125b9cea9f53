"""The Telegram command menu: inventory names mapped to what setMyCommands accepts, and back.

Telegram command names are ``[a-z0-9_]{1,32}``; inventory names are wider (``pr-review``,
``skill:triage``, ``memory show``). Each name maps to a menu name by transliterating to ASCII,
lower-casing and joining the words with ``_``. Names already valid keep themselves and are
placed first, so a real ``pr_review`` is never displaced by ``pr-review``; later collisions
get ``_2``, ``_3``... in inventory order (host commands first). Names with nothing left
(``/😀``) are skipped and logged. The reverse map turns a menu name typed back
(``/pr_review 12``) into the original command (``/pr-review 12``) before the core sees it.
Telegram's ``/start`` (sent when someone opens the bot) reads as ``/help`` unless the
inventory has a ``start`` of its own.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

from contract import Command, utf16_len, utf16_prefix
from gateway.inventory import usage_hint

log = logging.getLogger("slashgate.telegram")

MAX_COMMANDS = 100
MAX_NAME = 32
MAX_DESCRIPTION = 256
NAME = re.compile(r"[a-z0-9_]{1,32}")

_NOT_NAME = re.compile(r"[^a-z0-9]+")
# The leading command as a menu name: ``/pr_review`` or ``/pr_review@bot``, then space or end.
_LEADING = re.compile(r"(\s*/)([A-Za-z0-9_]{1,32})(@[A-Za-z0-9_]+)?(?=\s|$)")


def telegram_name(name: str) -> str | None:
    """``pr-review`` -> ``pr_review``; None when nothing expressible is left."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    mapped = _NOT_NAME.sub("_", ascii_name.lower()).strip("_")[:MAX_NAME].rstrip("_")
    return mapped or None


def describe(command: Command) -> str:
    """A description Telegram accepts: 1-256 characters on one line."""
    shown = usage_hint(command.hint) or command.name  # without a description: the hint
    text = " ".join(command.description.split()) or " ".join(shown.split())
    if utf16_len(text) <= MAX_DESCRIPTION:
        return text
    return text[: utf16_prefix(text, MAX_DESCRIPTION - 1)].rstrip() + "…"


@dataclass(frozen=True)
class Menu:
    """What to publish (``commands``: menu name, description) and how to read names back."""

    commands: tuple[tuple[str, str], ...] = ()
    original: dict[str, str] = field(default_factory=dict)  # menu name -> inventory name
    skipped: tuple[str, ...] = ()

    @cached_property
    def names(self) -> dict[str, str]:
        """Inventory name -> menu name, for the commands in the menu."""
        listed = {name for name, _ in self.commands}
        return {o: m for m, o in self.original.items() if m in listed}

    def without(self, hidden: Callable[[str], bool]) -> tuple[tuple[str, str], ...]:
        """The commands to publish less those ``hidden`` says (by inventory name): the names
        stay those of the whole menu, so that a name means one command in every scope.
        """
        return tuple(
            (name, text) for name, text in self.commands if not hidden(self.original[name])
        )

    @classmethod
    def build(cls, inventory: Iterable[Command]) -> Menu:
        unique: list[Command] = []
        seen: set[str] = set()
        for command in inventory:  # host commands come first and shadow runtime namesakes
            if command.name.lower() not in seen:
                seen.add(command.name.lower())
                unique.append(command)

        mapped = [(command, telegram_name(command.name)) for command in unique]
        names: dict[int, str] = {}
        taken: set[str] = set()
        # Names that are already valid keep themselves, whatever their place in the list.
        for i, (command, name) in enumerate(mapped):
            if name is not None and name == command.name.lower() and name not in taken:
                names[i] = name
                taken.add(name)
        for i, (_, name) in enumerate(mapped):
            if name is None or i in names:
                continue
            candidate, n = name, 2
            while candidate in taken:
                suffix = f"_{n}"
                candidate = name[: MAX_NAME - len(suffix)].rstrip("_") + suffix
                n += 1
            names[i] = candidate
            taken.add(candidate)

        commands = tuple(
            (names[i], describe(command)) for i, (command, _) in enumerate(mapped) if i in names
        )
        skipped = tuple(command.name for command, name in mapped if name is None)
        original = {names[i]: command.name for i, (command, _) in enumerate(mapped) if i in names}
        if skipped:
            log.warning("commands without a Telegram menu name, not in the menu: %s", skipped)
        if len(commands) > MAX_COMMANDS:
            log.warning(
                "%d commands, Telegram shows %d: left out %s",
                len(commands),
                MAX_COMMANDS,
                [original[name] for name, _ in commands[MAX_COMMANDS:]],
            )
            commands = commands[:MAX_COMMANDS]
        return cls(commands, original, skipped)

    def rewrite(self, text: str) -> str:
        """Put the original name back for a menu name typed as the leading command.

        Only the command token changes (``/pr_review@bot 12`` -> ``/pr-review@bot 12``; a
        multi-word name keeps the addressee on its first word); the rest stays as typed.
        """
        match = _LEADING.match(text)
        if match is None:
            return text
        typed = match.group(2)
        original = self.original.get(typed.lower())
        if original is None and typed.lower() == "start":
            original = "help"  # Telegram sends /start when someone opens the bot
        if original is None or original.lower() == typed.lower():
            return text
        first, *more = original.split()
        token = first + (match.group(3) or "") + "".join(f" {word}" for word in more)
        return match.group(1) + token + text[match.end() :]
