"""Completion at a cursor: the commands and reference prefixes that fit what is being typed.

Pure, like the rest of the contract: every surface (the web chat, an editor, a CLI) asks the
same question and gets the same answer, so no client re-implements the rules. Offsets are
UTF-16 code units, as in composer_input spans and JavaScript's ``selectionStart``.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .classify import SlashContract
from .models import Command, CommandArgument, CommandSource
from .utf16 import utf16_len, utf16_prefix

Context = Literal["command", "reference", "arguments", "none"]
Match = Literal["exact", "prefix", "word", "fuzzy"]

REFERENCES: tuple[tuple[str, str], ...] = (
    ("@file:", "A file path"),
    ("@branch:", "A branch name"),
    ("@symbol:", "A code symbol"),
)
# What may follow the "/" of a command name being typed (the contract's name pattern, words
# separated by white space for multi-word names).
_NAME_PREFIX = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9_:.-]*)?")
_WORD_BREAK = re.compile(r"[\s_:.-]+")
_RANKS: dict[Match, int] = {"exact": 0, "prefix": 1, "word": 2, "fuzzy": 3}


class CompletionItem(BaseModel):
    """One choice: a command (``name`` is canonical) or a reference prefix (``@file:``)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["command", "reference"]
    name: str
    insert: str  # what replaces the completion's span when the item is accepted
    description: str = ""
    hint: str | None = None
    arguments: tuple[CommandArgument, ...] | None = None
    source: CommandSource | None = None  # None for interactive-only names and references
    interactive_only: bool = False
    match: Match = "prefix"


class Completion(BaseModel):
    """What fits at the cursor. ``start``/``end`` (UTF-16) is the span an item replaces.

    ``context``: ``command`` (a /name being typed: leading, or later in the text where only
    known commands count), ``reference`` (an ``@kind:`` prefix being typed), ``arguments``
    (after a supported leading command: ``command`` says which, for its hint), ``none``.
    """

    model_config = ConfigDict(frozen=True)

    context: Context
    start: int
    end: int
    query: str = ""
    items: tuple[CompletionItem, ...] = ()
    total: int = 0  # matches before the limit
    command: CompletionItem | None = None


def complete(
    text: str,
    cursor: int | None,
    commands: Iterable[Command],
    interactive_only: Iterable[str] = (),
    limit: int = 50,
) -> Completion:
    """The completion of ``text`` at ``cursor`` (UTF-16 units; None = the end).

    ``commands`` is the effective inventory, gateway commands first: a name listed twice
    keeps its first entry, as classification gives gateway commands precedence. Raises
    ValueError for a cursor outside the text.
    """
    total_units = utf16_len(text)
    if cursor is None:
        cursor = total_units
    if not 0 <= cursor <= total_units:
        raise ValueError(
            f"cursor {cursor} is outside the text (0 to {total_units} UTF-16 code units)"
        )
    pos = utf16_prefix(text, cursor)
    inventory = _dedupe(commands)
    interactive = tuple(
        n for n in dict.fromkeys(n.lower() for n in interactive_only) if n not in inventory
    )
    token_start = pos
    while token_start and not text[token_start - 1].isspace():
        token_start -= 1
    token_end = pos
    while token_end < len(text) and not text[token_end].isspace():
        token_end += 1
    span = (utf16_len(text[:token_start]), utf16_len(text[:token_end]))
    lead = len(text) - len(text.lstrip())
    leading = text.startswith("/", lead) and not text.startswith("//", lead)

    # "/ x" is invalid: a name must follow the "/" at once.
    if leading and pos > lead and not text[lead + 1 : lead + 2].isspace():
        segment = text[lead + 1 : pos]
        words = segment.lower().split()
        if segment[-1:].isspace():
            words.append("")
        query = " ".join(words)
        if len(words) <= 1:
            found = _NAME_PREFIX.fullmatch(query) is not None
            items, total = _rank(query, inventory, interactive, limit) if found else ((), 0)
        else:  # several words: only a multi-word name still being typed (else they are args)
            longer = {k: c for k, c in inventory.items() if k.startswith(query)}
            items, total = _rank(query, longer, (), limit)
        if items:
            return Completion(
                context="command", start=utf16_len(text[:lead]), end=span[1], query=query,
                items=items, total=total,
            )  # fmt: skip

    before = text[token_start:pos]
    if before.startswith("/") and (token_start != lead or not leading):
        query = before[1:]
        if _NAME_PREFIX.fullmatch(query):
            items, total = _rank(query, inventory, (), limit)  # known commands only
            if items:
                return Completion(
                    context="command", start=span[0], end=span[1], query=query,
                    items=items, total=total,
                )  # fmt: skip
    elif before.startswith("@"):
        items = tuple(
            CompletionItem(kind="reference", name=prefix, insert=prefix, description=description)
            for prefix, description in REFERENCES
            if prefix.startswith(before) and prefix != before
        )
        if items:
            return Completion(
                context="reference", start=span[0], end=span[1], query=before,
                items=items, total=len(items),
            )  # fmt: skip

    if leading and pos > lead:
        # Only the commands sharing the typed first word can be the leading one.
        first = text[lead + 1 : pos].split(maxsplit=1)[:1]
        typed = first[0].partition("@")[0].lower() if first else ""
        candidates = [c for k, c in inventory.items() if k.partition(" ")[0] == typed]
        result = SlashContract(commands=candidates).classify(text[:pos])
        # Past the name: white space typed after it, or arguments already.
        if result.kind == "supported" and (result.args or text[pos - 1].isspace()):
            assert result.command is not None
            command = inventory[" ".join(result.command.lower().split())]
            return Completion(
                context="arguments", start=cursor, end=cursor, command=_item(command, "exact")
            )
    return Completion(context="none", start=cursor, end=cursor)


def _dedupe(commands: Iterable[Command]) -> dict[str, Command]:
    """Lower-cased (white space normalized) name -> the first command of that name."""
    inventory: dict[str, Command] = {}
    for command in commands:
        key = " ".join(command.name.lower().split())
        if key:
            inventory.setdefault(key, command)
    return inventory


def _rank(
    query: str, inventory: dict[str, Command], interactive: Iterable[str], limit: int
) -> tuple[tuple[CompletionItem, ...], int]:
    """Items matching ``query``: exact, then prefix, then a word's prefix, then fuzzy."""
    wanted = query.lower()
    # (rank, tie-break, order, what) first; items are built for the best ``limit`` only.
    scored: list[tuple[int, int, int, Match, Command | str]] = []
    for order, (key, command) in enumerate(inventory.items()):
        found = _match(wanted, key)
        if found is not None:
            scored.append((_RANKS[found[0]], found[1], order, found[0], command))
    for order, name in enumerate(interactive, len(inventory)):
        found = _match(wanted, name)
        if found is not None:
            scored.append((_RANKS[found[0]], found[1], order, found[0], name))
    best = heapq.nsmallest(limit, scored, key=lambda entry: entry[:3])
    return tuple(_item(what, match) for *_, match, what in best), len(scored)


def _match(query: str, name: str) -> tuple[Match, int] | None:
    """How ``name`` matches, with a tie-break (shorter or tighter first); None: it does not.

    An empty query lists everything in inventory order.
    """
    if not query:
        return "prefix", 0
    if name == query:
        return "exact", 0
    if name.startswith(query):
        return "prefix", len(name)
    if any(word.startswith(query) for word in _WORD_BREAK.split(name)[1:]):
        return "word", len(name)
    # Fuzzy: the query's characters in order; fewer skipped characters rank first.
    index = name.find(query[0])
    if index < 0:
        return None
    first = index
    for char in query[1:]:
        index = name.find(char, index + 1)
        if index < 0:
            return None
    return "fuzzy", index - first


def _item(what: Command | str, match: Match) -> CompletionItem:
    """A command's item; a bare name is an interactive-only one (not in the inventory)."""
    if isinstance(what, str):
        return CompletionItem(
            kind="command", name=what, insert=f"/{what} ", interactive_only=True,
            description="Only runs in the interactive TUI", match=match,
        )  # fmt: skip
    return CompletionItem(
        kind="command",
        name=what.name,
        insert=f"/{what.name} ",
        description=what.description,
        hint=what.hint,
        arguments=what.arguments,
        source=what.source,
        match=match,
    )
