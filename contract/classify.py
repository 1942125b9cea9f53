"""Classification of the leading token and construction of the composer_input node list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from .catalog import Catalog, Category, categorize
from .models import Command, ComposerInputPayload
from .utf16 import has_astral, utf16_len

Kind = Literal["not_slash", "supported", "interactive_only", "unsupported", "invalid"]
Source = Literal["runtime", "gateway"]

# Python's \s is str.isspace(): any Unicode white space, the same test .strip() uses.
_LEADING_WS = re.compile(r"\s*")
_TOKEN = re.compile(r"\S+")
# A token that could be a node: "/" or "@" at the start or after white space.
_CANDIDATE = re.compile(r"(?<!\S)[/@]\S*")
_NEXT_WORD = re.compile(r"\s+(\S+)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:.-]*")
_TRAILING_PUNCT = ".,;:!?)"
_REFERENCES = ("@file:", "@branch:", "@symbol:")

# (remaining lower-cased words, canonical command, source); longest first per first word.
_Entry = tuple[tuple[str, ...], Command, Source]
# A node before conversion to UTF-16: (kind, start, end, value) in code points.
_Span = tuple[str, int, int, str]


class Classification:
    """The contract's answer for one input. ``payload`` is built on first access."""

    __slots__ = (
        "_contract",
        "_lead",
        "_payload",
        "args",
        "command",
        "for_other_bot",
        "kind",
        "source",
        "text",
        "typed",
    )

    def __init__(
        self,
        contract: SlashContract,
        text: str,
        kind: Kind,
        *,
        command: str | None = None,
        typed: str | None = None,
        args: str = "",
        for_other_bot: bool = False,
        source: Source | None = None,
        lead: tuple[int, int] | None = None,
    ) -> None:
        self.kind: Kind = kind
        self.command = command
        self.typed = typed
        self.args = args
        self.for_other_bot = for_other_bot
        self.source: Source | None = source
        self.text = text
        self._lead = lead
        self._contract = contract
        self._payload: ComposerInputPayload | None = None

    @property
    def payload(self) -> ComposerInputPayload:
        if self._payload is None:
            self._payload = self._contract.build_payload(self.text, self._lead, self.command)
        return self._payload

    @property
    def name(self) -> str | None:
        """The name a user-facing text should show: canonical if known, else as typed."""
        return self.command or self.typed

    def __repr__(self) -> str:
        return (
            f"Classification(kind={self.kind!r}, command={self.command!r}, typed={self.typed!r}, "
            f"args={self.args!r}, for_other_bot={self.for_other_bot!r}, source={self.source!r})"
        )


class SlashContract:
    """Classifies input against one effective inventory. Pure and reusable across messages."""

    def __init__(
        self,
        commands: Iterable[Command] = (),
        interactive_only: Iterable[str] = (),
        host_commands: Iterable[Command] = (),
        bot_username: str | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        self.commands: tuple[Command, ...] = tuple(commands)
        self.host_commands: tuple[Command, ...] = tuple(host_commands)
        self.interactive_only: frozenset[str] = frozenset(n.lower() for n in interactive_only)
        self.bot_username = bot_username.lstrip("@").lower() if bot_username else None
        self.catalog = catalog or Catalog()
        self._index = self._build_index()

    def _build_index(self) -> dict[str, list[_Entry]]:
        index: dict[str, dict[tuple[str, ...], _Entry]] = {}
        # Host commands go last so that they overwrite a runtime command of the same name.
        layers: tuple[tuple[Source, tuple[Command, ...]], ...] = (
            ("runtime", self.commands),
            ("gateway", self.host_commands),
        )
        for source, commands in layers:
            for command in commands:
                words = tuple(command.name.lower().split())
                if words:
                    index.setdefault(words[0], {})[words] = (words[1:], command, source)
        return {
            first: sorted(entries.values(), key=lambda e: len(e[0]), reverse=True)
            for first, entries in index.items()
        }

    # -- classification -------------------------------------------------------------------

    def classify(self, text: str) -> Classification:
        start = _LEADING_WS.match(text).end()  # type: ignore[union-attr]
        if not text.startswith("/", start) or text.startswith("//", start):
            return Classification(self, text, "not_slash")
        token_end = _TOKEN.match(text, start).end()  # type: ignore[union-attr]
        body = text[start + 1 : token_end]
        if "/" in body:
            return Classification(self, text, "not_slash")
        name, _, addressee = body.partition("@")
        if not name:
            return Classification(self, text, "invalid", args=text[token_end:].strip())
        if not _NAME.fullmatch(name):
            return Classification(self, text, "invalid", typed=name, args=text[token_end:].strip())
        other = bool(addressee and self.bot_username and addressee.lower() != self.bot_username)
        lowered = name.lower()
        for words, command, source in self._index.get(lowered, ()):
            end = _match_words(text, token_end, words)
            if end >= 0:
                return Classification(
                    self,
                    text,
                    "supported",
                    command=command.name,
                    typed=name,
                    args=text[end:].strip(),
                    for_other_bot=other,
                    source=source,
                    lead=(start, end),
                )
        args = text[token_end:].strip()
        if lowered in self.interactive_only:
            return Classification(
                self,
                text,
                "interactive_only",
                command=lowered,
                typed=name,
                args=args,
                for_other_bot=other,
            )
        return Classification(self, text, "unsupported", typed=name, args=args, for_other_bot=other)

    # -- user-facing texts ----------------------------------------------------------------

    def rejection(self, result: Classification) -> str | None:
        """The standard text for input that must not run, else None."""
        if result.kind == "invalid":
            return self.catalog.invalid
        if result.kind in ("unsupported", "interactive_only"):
            return self.catalog.text(result.kind, result.name)
        return None

    def failure(self, category: Category, name: str | None, error: str | None = None) -> str:
        """The standard text for a failure; ``name`` None means the input was not a command."""
        return self.catalog.text(category, name, error)

    @staticmethod
    def categorize(error_text: str | None) -> Category:
        return categorize(error_text)

    # -- composer_input -------------------------------------------------------------------

    def build_payload(
        self, text: str, lead: tuple[int, int] | None, command: str | None
    ) -> ComposerInputPayload:
        spans: list[_Span] = []
        pos = 0
        if lead is not None and command is not None:
            if lead[0]:
                spans.append(("text", 0, lead[0], ""))
            spans.append(("slash_command", lead[0], lead[1], command))
            pos = lead[1]
        if pos < len(text):
            self._scan_inline(text, pos, spans)
        return ComposerInputPayload.model_validate(
            {"source": text, "nodes": _to_nodes(text, spans)}
        )

    def _scan_inline(self, text: str, pos: int, spans: list[_Span]) -> None:
        """Appends nodes covering text[pos:]: known /commands and @kind: references."""
        text_start = pos
        if "/" in text or "@" in text:
            for match in _CANDIDATE.finditer(text, pos):
                found = self._inline_node(text, match.start(), match.end())
                if found is None:
                    continue
                start, end = found[1], found[2]
                if start > text_start:
                    spans.append(("text", text_start, start, ""))
                spans.append(found)
                text_start = end
        if text_start < len(text):
            spans.append(("text", text_start, len(text), ""))

    def _inline_node(self, text: str, start: int, end: int) -> _Span | None:
        first = text[start]
        if first == "/":
            token = text[start + 1 : end]
            stripped = token.rstrip(_TRAILING_PUNCT)
            for words, command, _ in self._index.get(stripped.lower(), ()):
                if not words:
                    return ("slash_command", start, start + 1 + len(stripped), command.name)
                # A multi-word name continues only after a bare first word.
                stop = _match_words(text, end, words, tail=True) if stripped == token else -1
                if stop >= 0:
                    return ("slash_command", start, stop, command.name)
            return None
        if first == "@":
            for prefix in _REFERENCES:
                if text.startswith(prefix, start):
                    value = text[start + len(prefix) : end].rstrip(_TRAILING_PUNCT)
                    if value:
                        return (prefix[1:-1], start, start + len(prefix) + len(value), value)
        return None


def _match_words(text: str, pos: int, words: tuple[str, ...], tail: bool = False) -> int:
    """End of ``words`` following ``pos`` (case-insensitive, white space between), or -1.

    With ``tail`` the last word may carry trailing punctuation, which stays outside the match.
    """
    for i, word in enumerate(words):
        match = _NEXT_WORD.match(text, pos)
        if match is None:
            return -1
        typed = match.group(1)
        if tail and i == len(words) - 1:
            bare = typed.rstrip(_TRAILING_PUNCT)
            if bare.lower() != word:
                return -1
            return match.start(1) + len(bare)
        if typed.lower() != word:
            return -1
        pos = match.end()
    return pos


def _to_nodes(text: str, spans: list[_Span]) -> list[dict[str, object]]:
    """Node dicts with UTF-16 offsets; validated in one call by the payload model (in Rust)."""
    astral = has_astral(text)
    nodes: list[dict[str, object]] = []
    offset = 0
    for kind, start, end, value in spans:
        raw = text[start:end]
        if astral:
            u_start, offset = offset, offset + utf16_len(raw)
            u_end = offset
        else:
            u_start, u_end = start, end
        node: dict[str, object] = {"kind": kind, "start": u_start, "end": u_end, "raw": raw}
        if kind != "text":
            node["path" if kind == "file" else "name"] = value
        nodes.append(node)
    return nodes
