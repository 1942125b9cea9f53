"""Inventory layering from the composer-input RFC: static seeds, dynamic upserts."""

from __future__ import annotations

from collections.abc import Iterable

from .models import Command


class CommandRegistry:
    """Static declarations seed the list; dynamic registrations upsert by name and win.

    Unregistering a dynamic command reveals the static one of the same name again.
    Names compare case-insensitively, as classification does.
    """

    def __init__(self, static: Iterable[Command] = ()) -> None:
        self._static: dict[str, Command] = {
            c.name.lower(): c if c.source == "static" else c.model_copy(update={"source": "static"})
            for c in static
        }
        self._dynamic: dict[str, Command] = {}
        self._effective: tuple[Command, ...] = tuple(self._static.values())

    def get(self, name: str) -> Command | None:
        key = name.lower()
        return self._dynamic.get(key) or self._static.get(key)

    def list(self) -> tuple[Command, ...]:
        return self._effective

    def register(self, command: Command) -> tuple[Command, ...]:
        self._dynamic[command.name.lower()] = command.model_copy(update={"source": "dynamic"})
        return self._rebuild()

    def unregister(self, name: str) -> bool:
        if self._dynamic.pop(name.lower(), None) is None:
            return False
        self._rebuild()
        return True

    def _rebuild(self) -> tuple[Command, ...]:
        merged = [self._dynamic.get(key, command) for key, command in self._static.items()]
        merged.extend(c for key, c in self._dynamic.items() if key not in self._static)
        self._effective = tuple(merged)
        return self._effective
