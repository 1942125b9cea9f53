"""Classification of the leading token and construction of the composer_input node list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from .catalog import Catalog, Category, categorize
from .models import Command, ComposerInputPayload, Nodes, built_payload
from .utf16 import has_astral

Kind = Literal["not_slash", "supported", "interactive_only", "unsupported", "invalid"]
RUNS: frozenset[Kind] = frozenset(("supported", "not_slash"))  # the kinds with no rejection
Source = Literal["runtime", "gateway"]

# Python's \s is str.isspace(): any Unicode white space, the same test .strip() uses.
_LEADING_WS = re.compile(r"\s*")
# The usual first token in one match: "/name", maybe "@addressee", then white space or the
# end. What it refuses is not_slash or invalid (``_not_a_command``).
_LEAD = re.compile(r"\s*/([A-Za-z0-9][A-Za-z0-9_:.-]*)(?:@([^\s/]*))?(?!\S)")
_TOKEN = re.compile(r"\S+")
# A token that could be an inline command: "/" at the start or after white space. The
# look-behinds after the first character let the regex engine skip to "/" and "@".
_SLASH = re.compile(r"/(?<!\S/)\S*")
# A reference, split into (raw, kind, value): its value ends before trailing punctuation
# (\S* backtracks over that punctuation only, so the match is linear in the token).
_TRAILING_PUNCT = ".,;:!?)"
_REFERENCE = re.compile(rf"(@(?<!\S@)(file|branch|symbol):(\S*[^\s{re.escape(_TRAILING_PUNCT)}]))")
_NEXT_WORD = re.compile(r"\s+(\S+)")
_TAIL = 256  # characters of a message's end looked at for its trailing white space
_LONG = 4096  # characters: from here a copy of the text costs more than avoiding it

# (remaining lower-cased words, canonical name, source); longest first per first word.
_Entry = tuple[tuple[str, ...], str, Source]


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
        "name",
        "source",
        "text",
        "typed",
    )

    def __init__(  # positional: one is made per message
        self,
        contract: SlashContract,
        text: str,
        kind: Kind,
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
        # The name a user-facing text should show: canonical if known, else as typed (read
        # for every input that runs: an attribute, not a property).
        self.name: str | None = command or typed
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

    def as_typed(self) -> Classification:
        """This ``unsupported`` input as it runs when the runtime's command list is not known
        yet: ``supported``, the command being the name as typed (the payload is the same).
        """
        return Classification(
            self._contract,
            self.text,
            "supported",
            self.typed,
            self.typed,
            self.args,
            self.for_other_bot,
            "runtime",
        )

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
        self._slashes: re.Pattern[str] | None = None

    def _build_index(self) -> dict[str, tuple[_Entry, ...]]:
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
                    index.setdefault(words[0], {})[words] = (words[1:], command.name, source)
        return {
            first: tuple(sorted(entries.values(), key=lambda e: len(e[0]), reverse=True))
            for first, entries in index.items()
        }

    # -- classification -------------------------------------------------------------------

    def classify(self, text: str) -> Classification:
        match = _LEAD.match(text)
        if match is None:
            return self._not_a_command(text)
        name, addressee = match.groups()
        other = False
        if addressee and self.bot_username:
            other = addressee.lower() != self.bot_username
        token_end = match.end()
        entries = self._index.get(name)  # most commands are typed in lower case
        if entries is None:
            entries = self._index.get(name.lower(), ())
        for words, command, source in entries:
            end = _match_words(text, token_end, words) if words else token_end
            if end >= 0:
                lead = (match.start(1) - 1, end)
                args = text[end:].strip() if len(text) < _LONG else _rest(text, end)
                return Classification(
                    self, text, "supported", command, name, args, other, source, lead
                )
        args = _rest(text, token_end)
        lowered = name.lower()
        if lowered in self.interactive_only:
            return Classification(self, text, "interactive_only", lowered, name, args, other)
        return Classification(self, text, "unsupported", None, name, args, other)

    def _not_a_command(self, text: str) -> Classification:
        """``not_slash`` or ``invalid``: every input whose first token ``_LEAD`` refuses."""
        start = _LEADING_WS.match(text).end()  # type: ignore[union-attr]
        if not text.startswith("/", start) or text.startswith("//", start):
            return Classification(self, text, "not_slash")
        token_end = _TOKEN.match(text, start).end()  # type: ignore[union-attr]
        body = text[start + 1 : token_end]
        if "/" in body:
            return Classification(self, text, "not_slash")
        # An empty name or one that _NAME refuses (else _LEAD would have matched).
        typed = body.partition("@")[0] or None
        return Classification(self, text, "invalid", None, typed, _rest(text, token_end))

    # -- user-facing texts ----------------------------------------------------------------

    def rejection(self, result: Classification) -> str | None:
        """The standard text for input that must not run, else None (``RUNS``)."""
        if result.kind in RUNS:
            return None
        if result.kind == "invalid":
            return self.catalog.invalid
        if result.kind in ("unsupported", "interactive_only"):
            return self.catalog.text(result.kind, result.name)
        return None

    def failure(
        self, category: Category, name: str | None, error: str | None = None, retry: int = 1
    ) -> str:
        """The standard text for a failure; ``name`` None means the input was not a command.
        ``retry``: the seconds a ``rate_limited`` sender waits.
        """
        return self.catalog.text(category, name, error, retry)

    @staticmethod
    def categorize(error_text: str | None) -> Category:
        return categorize(error_text)

    # -- composer_input -------------------------------------------------------------------

    def build_payload(
        self, text: str, lead: tuple[int, int] | None, command: str | None
    ) -> ComposerInputPayload:
        # The pieces of contract.pieces: references split out by one regex, commands added
        # in the same shape; a 1 MiB message has tens of thousands of nodes, and a Python
        # step per node is what would cost.
        pos = 0
        if lead is not None and command is not None:
            start, pos = lead
            parts = [text[:start], text[start:pos], "slash_command", command]
        else:
            parts = []
        if text.find("/", pos) >= 0 and (inline := self._inline_commands(text, pos)):
            for start, stop, name in inline:
                parts += _split(text[pos:start])
                parts += (text[start:stop], "slash_command", name)
                pos = stop
            parts += _split(text[pos:])
        elif len(text) >= _LONG:  # after its leading command only: split whole, not copied
            parts += _split_from(text, pos)
        else:  # ``_split``, inline: most messages take this way
            rest = text[pos:]
            parts += _REFERENCE.split(rest) if "@" in rest else (rest,)
        astral = not text.isascii() and has_astral(text)
        return built_payload(text, Nodes.from_pieces(parts, astral))

    def _slash_pattern(self) -> re.Pattern[str] | None:
        """Tokens that may be inline commands: a known command's first word (any case,
        trailing punctuation allowed). A superset of what ``_inline_command`` takes, so that
        it is called for few tokens besides the commands themselves.
        """
        if self._slashes is None and self._index:
            words = sorted(self._index, key=len, reverse=True)
            if all(word.isascii() for word in words):  # re's case folding equals .lower()
                names = "|".join(re.escape(word) for word in words)
                punct = re.escape(_TRAILING_PUNCT)
                self._slashes = re.compile(f"/(?<!\\S/)(?i:{names})[{punct}]*(?!\\S)")
            else:
                self._slashes = _SLASH
        return self._slashes

    def _inline_commands(self, text: str, pos: int) -> list[tuple[int, int, str]]:
        """(start, stop, canonical name) of every known /command in text[pos:]."""
        pattern = self._slash_pattern()
        found: list[tuple[int, int, str]] = []
        for match in pattern.finditer(text, pos) if pattern is not None else ():
            start = match.start()
            if start < pos:  # inside the words of the multi-word command before it
                continue
            command = self._inline_command(text, start, match.end())
            if command is not None:
                found.append(command)
                pos = command[1]
        return found

    def _inline_command(self, text: str, start: int, end: int) -> tuple[int, int, str] | None:
        token = text[start + 1 : end]
        stripped = token.rstrip(_TRAILING_PUNCT)
        for words, command, _ in self._index.get(stripped.lower(), ()):
            if not words:
                return start, start + 1 + len(stripped), command
            # A multi-word name continues only after a bare first word.
            stop = _match_words(text, end, words, tail=True) if stripped == token else -1
            if stop >= 0:
                return start, stop, command
        return None


def _split(text: str) -> list[str]:
    """``text`` around its references: text, (raw, kind, value, text) for each one. The
    caller's slice starts after white space, punctuation or a command (never inside a token),
    so the look-behind of _REFERENCE judges its first character as it would in the message.
    """
    return _REFERENCE.split(text) if "@" in text else [text]


def _split_from(text: str, pos: int) -> list[str]:
    """``_split(text[pos:])``, without copying the text once more when no reference starts
    before ``pos`` (as none does in a leading command).
    """
    if pos and text.find("@", pos) >= 0:
        parts = _REFERENCE.split(text)
        if len(parts[0]) >= pos:
            parts[0] = parts[0][pos:]
            return parts
    return _split(text[pos:])


def _rest(text: str, start: int) -> str:
    """``text[start:].strip()``, in one copy for a long text: a copy of a long message is
    megabytes, and a fresh allocation's page faults, each time.
    """
    cut = len(text) - _TAIL
    if start >= cut:
        return text[start:].strip()
    start = _LEADING_WS.match(text, start).end()  # type: ignore[union-attr]
    tail = text[max(start, cut) :].rstrip()
    if start >= cut:
        return tail
    if not tail:  # white space runs past the tail
        return text[start:].rstrip()
    return text[start : cut + len(tail)]


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
