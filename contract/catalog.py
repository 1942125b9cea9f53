"""The standard rejection and failure texts, and the mapping of runtime error text to categories."""

from __future__ import annotations

import re
from string import Formatter
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

Category = Literal[
    "invalid",
    "unsupported",
    "interactive_only",
    "busy",
    "timeout",
    "generic",
    "forbidden",
    "rate_limited",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)


class Catalog(BaseModel):
    """User-facing texts. ``{name}`` is the command name, ``{error}`` the runtime's error text,
    ``{retry}`` (``rate_limited`` only) the whole seconds until the sender may send again.

    The ``plain_*`` texts are for failures of input that was not a slash command.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    invalid: str = "Invalid slash command. Enter a command name after /."
    unsupported: str = "Unsupported slash command /{name}. Send /help to list available commands."
    interactive_only: str = (
        "Unsupported slash command /{name}. This command only runs in the interactive TUI."
    )
    busy: str = (
        "Slash command /{name} could not run because the session is busy. Retry in a moment."
    )
    timeout: str = "Slash command /{name} timed out. Retry in a moment."
    generic: str = "Slash command /{name} failed: {error}"
    forbidden: str = "Slash command /{name} is not allowed for you here."
    rate_limited: str = (
        "Slash command /{name} could not run: you are sending too fast. Retry in {retry} s."
    )
    plain_unsupported: str = "That request is not supported: {error}"
    plain_busy: str = "The session is busy. Retry in a moment."
    plain_timeout: str = "The request timed out. Retry in a moment."
    plain_generic: str = "The request failed: {error}"
    plain_invalid: str = "Invalid request: {error}"
    plain_interactive_only: str = "That only runs in the interactive TUI."
    plain_forbidden: str = "You are not allowed to do that here."
    plain_rate_limited: str = "You are sending too fast. Retry in {retry} s."

    @model_validator(mode="after")
    def _placeholders_are_known(self) -> Catalog:
        # A wrong placeholder would fail every matching reply: refuse it when configured.
        for key, template in self:
            plain = key.startswith("plain_")
            allowed: tuple[str, ...] = ("error",) if plain else ("name", "error")
            if key.endswith("rate_limited"):
                allowed += ("retry",)
            problem = placeholder_problem(template, allowed)
            if problem:
                raise ValueError(f"{key}: {problem}")
        return self

    def text(
        self, category: Category, name: str | None, error: str | None = None, retry: int = 1
    ) -> str:
        template: str = getattr(self, category if name is not None else f"plain_{category}")
        return template.format(name=name, error=error or "failed", retry=max(1, retry))


def placeholder_problem(template: str, allowed: tuple[str, ...]) -> str | None:
    """What is wrong with ``template``'s ``{placeholders}``; None when each is allowed."""
    shown = ", ".join("{" + name + "}" for name in allowed)
    try:
        fields = [(f, spec) for _, f, spec, _ in Formatter().parse(template) if f is not None]
    except ValueError as exc:  # a lone "{" or "}"
        return f"{exc} (write {{{{ and }}}} for literal braces; placeholders: {shown})"
    for found, spec in fields:
        if found not in allowed or "{" in (spec or ""):
            return f"placeholder {{{found}}} is not allowed here; the placeholders are {shown}"
    return None


# First match wins, in this order (docs/contract.md).
_PATTERNS: tuple[tuple[Category, re.Pattern[str]], ...] = (
    ("unsupported", re.compile(r"unknown command|not found|unrecognized|unsupported", re.I)),
    (
        "busy",
        re.compile(
            r"streamingbehavior|already streaming|already processing|session busy|busy", re.I
        ),
    ),
    ("timeout", re.compile(r"timed out|timeout", re.I)),
)


def categorize(error_text: str | None) -> Category:
    """Map a runtime's free-form error text to a category."""
    if error_text:
        for category, pattern in _PATTERNS:
            if pattern.search(error_text):
                return category
    return "generic"
