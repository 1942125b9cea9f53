"""Classification of the leading token and construction of the composer_input node list."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable
from typing import Literal

from .catalog import Catalog, Category, categorize
from .models import Command, ComposerInputPayload, Nodes, Row
from .utf16 import ASTRAL, has_astral

Kind = Literal["not_slash", "supported", "interactive_only", "unsupported", "invalid"]
Source = Literal["runtime", "gateway"]

# Python's \s is str.isspace(): any Unicode white space, the same test .strip() uses.
_LEADING_WS = re.compile(r"\s*")
_TOKEN = re.compile(r"\S+")
# A token that could be a node: "/" or "@" at the start or after white space.
_CANDIDATE = re.compile(r"(?<!\S)[/@]\S*")
# The look-behind after the first character lets the regex engine skip to "/" and "@".
_REFERENCE = r"@(?<!\S@)(?:file|branch|symbol):\S*"
_NEXT_WORD = re.compile(r"\s+(\S+)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_:.-]*")
_TRAILING_PUNCT = ".,;:!?)"
_REFERENCES = ("@file:", "@branch:", "@symbol:")

# (remaining lower-cased words, canonical command, source); longest first per first word.
_Entry = tuple[tuple[str, ...], Command, Source]


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
        self._candidates: re.Pattern[str] | None = None

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
        rows: list[Row] = []  # offsets in code points until _in_utf16
        pos = 0
        if lead is not None and command is not None:
            if lead[0]:
                rows.append(("text", 0, lead[0], text[: lead[0]], None))
            rows.append(("slash_command", lead[0], lead[1], text[lead[0] : lead[1]], command))
            pos = lead[1]
        if pos < len(text):
            self._scan_inline(text, pos, rows)
        if has_astral(text):
            rows = _in_utf16(text, rows)
        return ComposerInputPayload(source=text, nodes=Nodes(rows))

    def _candidate_pattern(self) -> re.Pattern[str]:
        """Tokens that may be nodes: a known command's first word (any case, trailing
        punctuation allowed) or a reference. A superset of what ``_inline_node`` takes, so
        that it is called for few tokens besides the nodes themselves.
        """
        if self._candidates is None:
            words = sorted(self._index, key=len, reverse=True)
            if all(word.isascii() for word in words):  # re's case folding equals .lower()
                names = "|".join(re.escape(word) for word in words)
                punct = re.escape(_TRAILING_PUNCT)
                slash = f"/(?<!\\S/)(?i:{names})[{punct}]*(?!\\S)" if words else ""
                self._candidates = re.compile(f"{slash}|{_REFERENCE}" if slash else _REFERENCE)
            else:
                self._candidates = _CANDIDATE
        return self._candidates

    def _scan_inline(self, text: str, pos: int, rows: list[Row]) -> None:
        """Appends nodes covering text[pos:]: known /commands and @kind: references."""
        text_start = pos
        if "/" in text or "@" in text:
            for match in self._candidate_pattern().finditer(text, pos):
                found = self._inline_node(text, match.start(), match.end())
                if found is None:
                    continue
                start, end = found[1], found[2]
                if start > text_start:
                    rows.append(("text", text_start, start, text[text_start:start], None))
                rows.append(found)
                text_start = end
        if text_start < len(text):
            rows.append(("text", text_start, len(text), text[text_start:], None))

    def _inline_node(self, text: str, start: int, end: int) -> Row | None:
        first = text[start]
        if first == "/":
            token = text[start + 1 : end]
            stripped = token.rstrip(_TRAILING_PUNCT)
            for words, command, _ in self._index.get(stripped.lower(), ()):
                if not words:
                    stop = start + 1 + len(stripped)
                    return ("slash_command", start, stop, text[start:stop], command.name)
                # A multi-word name continues only after a bare first word.
                stop = _match_words(text, end, words, tail=True) if stripped == token else -1
                if stop >= 0:
                    return ("slash_command", start, stop, text[start:stop], command.name)
            return None
        if first == "@":
            for prefix in _REFERENCES:
                if text.startswith(prefix, start):
                    value = text[start + len(prefix) : end].rstrip(_TRAILING_PUNCT)
                    if value:
                        stop = start + len(prefix) + len(value)
                        return (prefix[1:-1], start, stop, text[start:stop], value)
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


def _in_utf16(text: str, rows: list[Row]) -> list[Row]:
    """Rows with UTF-16 offsets: a code point offset plus the astral characters before it,
    counted in one walk along the (ordered) rows.
    """
    astral = [match.start() for match in ASTRAL.finditer(text)]
    converted: list[Row] = []
    seen, count = 0, len(astral)  # seen: astral characters before the previous row's end
    for kind, start, end, raw, value in rows:
        if seen and astral[seen - 1] >= start:  # this row starts inside the previous one
            seen = bisect_left(astral, start)
        while seen < count and astral[seen] < start:
            seen += 1
        u_start = start + seen
        while seen < count and astral[seen] < end:
            seen += 1
        converted.append((kind, u_start, end + seen, raw, value))
    return converted
