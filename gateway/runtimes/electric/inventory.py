"""An entity's command inventory: its stream's ``slash_command`` rows over the type's list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from contract import Command, CommandRegistry

from .wire import SlashCommand, parse_slash_command


class Inventory:
    """The stream's rows are the entity's effective commands (the runtime writes the static
    row back when a dynamic one is unregistered, and deletes a row only when nothing is left
    underneath). The type's current static list fills in what the stream lacks (commands
    declared after the entity was created) and wins over a stale static row.
    """

    def __init__(self, static: Iterable[Command] = (), rows: Iterable[SlashCommand] = ()) -> None:
        self.static = tuple(static)
        self.rows: dict[str, SlashCommand] = {row.name: row for row in rows}
        self._commands: tuple[Command, ...] | None = None

    def apply(self, event: dict[str, Any]) -> bool:
        """Apply one ``slash_command`` change event; True when a row changed."""
        key = event.get("key")
        operation = (event.get("headers") or {}).get("operation", "insert")
        if operation == "delete":
            if not isinstance(key, str) or self.rows.pop(key, None) is None:
                return False
        else:
            row = parse_slash_command(event.get("value"))
            if row is None or self.rows.get(row.name) == row:
                return False
            if isinstance(key, str) and key != row.name:
                self.rows.pop(key, None)
            self.rows[row.name] = row
        self._commands = None
        return True

    def declare(self, static: Iterable[Command]) -> bool:
        """The type's list as read anew; True when the effective commands changed."""
        before = self.commands()
        self.static = tuple(static)
        self._commands = None
        return self.commands() != before

    def clear(self) -> None:
        """Forget the stream's rows (it is read again from the start)."""
        self.rows.clear()
        self._commands = None

    def commands(self) -> tuple[Command, ...]:
        if self._commands is None:
            statics = {r.name: r.command() for r in self.rows.values() if r.source == "static"}
            statics.update((c.name, c) for c in self.static)
            registry = CommandRegistry(statics.values())
            for row in self.rows.values():
                if row.source == "dynamic":
                    registry.register(row.command())
            self._commands = registry.list()
        return self._commands

    def snapshot(self) -> list[dict[str, Any]]:
        return [row.model_dump(mode="json", exclude_none=True) for row in self.rows.values()]

    @staticmethod
    def restore(data: Any) -> list[SlashCommand]:
        rows = [parse_slash_command(item) for item in data] if isinstance(data, list) else []
        return [row for row in rows if row is not None]
