"""Markdown (the core's reply format) -> Telegram HTML, in chunks Telegram accepts.

A real Markdown parser (markdown-it-py) turns the text into tokens; those become a small list
of operations (visible text, opening tags, closings) per top-level block, and a packer cuts
them into chunks of at most ``LIMIT`` visible characters, measured after rendering (tags do
not count, escapes count once). Cuts fall between blocks where possible, then at a line end,
then at a space; a code block that fits in one message is never cut, and one that does not
is closed and reopened so that every chunk is well-formed. Each chunk also carries its plain
text, sent instead when Telegram refuses the entities.

Telegram's nesting rules shape the output: bold, italic and strikethrough may wrap anything
but code; code, pre and links never contain each other; blockquotes do not nest.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from markdown_it.token import Token

from channels.markdown import PARSER, aligned
from contract import utf16_len, utf16_prefix

LIMIT = 4096
"""Telegram's limit on a message's text after entity parsing (counted here in UTF-16 code
units, which is never less than Telegram's own count)."""
MIN_LIMIT = 2
"""The smallest limit ``render`` cuts to: one character, which may take two UTF-16 units."""

_LINK_SCHEMES = frozenset({"http", "https", "tg", "mailto"})
# Characters that can make Markdown (or an HTML escape) of plain text; a digit or "-" only at
# the start (an ordered list, a bullet).
_MARKUP = re.compile(r"[\\`*_~\[\]<>&!#|{}=+]|^[\d\-]")
_STYLE = {"strong": ("<b>", "</b>", "b"), "em": ("<i>", "</i>", "i"), "s": ("<s>", "</s>", "s")}


@dataclass(frozen=True, slots=True)
class Chunk:
    """One message: its Telegram HTML and the same text without entities."""

    html: str
    plain: str


@dataclass(frozen=True, slots=True)
class _Tag:
    open: str
    close: str
    kind: str
    size: int = 0  # visible size of a code block's content: kept in one chunk when it fits


# An operation: visible text, an opening tag, or None (closes the innermost open tag).
_Op = str | _Tag | None


def render(markdown: str, limit: int = LIMIT) -> list[Chunk]:
    """The chunks to send for ``markdown``, in order; at least one for non-blank input.
    Raises ValueError for a limit below ``MIN_LIMIT``, which no chunk can fit.
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"a chunk limit of {limit} is below the minimum of {MIN_LIMIT}")
    if _plain(markdown, limit):  # most short replies: no parser needed
        return [Chunk(markdown, markdown)]
    return _parsed(markdown, limit)


def _parsed(markdown: str, limit: int) -> list[Chunk]:
    packer = _Packer(limit)
    for block in _Renderer().blocks(markdown):
        packer.add_block(block)
    return packer.finish()


def preview(markdown: str, limit: int = LIMIT) -> Chunk | None:
    """What a streaming preview shows: the last chunk of the text so far (None when blank)."""
    chunks = render(markdown, limit)
    return chunks[-1] if chunks else None


def _plain(markdown: str, limit: int) -> bool:
    """True when ``markdown`` renders as itself in one chunk: one short line of printable
    characters (so no tab, newline or exotic space), no surrounding space, nothing that Markdown
    or HTML reads as markup.
    """
    return (
        0 < len(markdown) <= limit // 2  # at most two UTF-16 units a character
        and markdown.isprintable()
        and markdown[0] != " "
        and markdown[-1] != " "
        and _MARKUP.search(markdown) is None
    )


def escape(text: str) -> str:
    return html.escape(text, quote=False)


# -- Markdown tokens -> operations ----------------------------------------------------------


class _Renderer:
    def __init__(self) -> None:
        self._blocks: list[list[_Op]] = []
        self._ops: list[_Op] = []
        self._break = False  # a line break is due before the next block's content
        self._lists: list[list[int]] = []  # [ordered (0/1), next number] per open list
        self._quote = 0
        self._inline: list[str] = []  # kinds of the open inline entities (b, i, s, a)
        self._links: list[bool] = []  # per open link: rendered as <a> (else plain text)
        self._table: list[list[str]] | None = None

    def blocks(self, markdown: str) -> list[list[_Op]]:
        for token in PARSER.parse(markdown):
            self._block(token)
            if token.level == 0 and token.nesting <= 0 and self._ops:
                self._blocks.append(self._ops)
                self._ops, self._break = [], False
        return self._blocks

    # -- block level ------------------------------------------------------------------------

    def _line(self) -> None:
        if self._break:
            self._ops.append("\n")
            self._break = False

    def _block(self, token: Token) -> None:
        kind = token.type
        if self._table is not None:
            self._table_token(token)
        elif kind == "inline":
            self._inline_tokens(token.children or [])
        elif kind == "paragraph_open":
            self._line()
        elif kind == "heading_open":
            self._line()
            self._open("<b>", "</b>", "b")
        elif kind == "heading_close":
            self._close()
            self._break = True
        elif kind in ("bullet_list_open", "ordered_list_open"):
            numbered = kind == "ordered_list_open"
            self._lists.append([int(numbered), int(token.attrGet("start") or 1)])
        elif kind == "list_item_open":
            self._line()
            ordered, number = self._lists[-1]
            indent = "  " * (len(self._lists) - 1)
            self._ops.append(f"{indent}{number}. " if ordered else f"{indent}• ")
            self._lists[-1][1] = number + 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            self._lists.pop()
            self._break = True
        elif kind == "blockquote_open":
            self._line()
            if not self._quote:
                self._ops.append(_Tag("<blockquote>", "</blockquote>", "blockquote"))
            self._quote += 1
        elif kind == "blockquote_close":
            self._quote -= 1
            if not self._quote:
                self._ops.append(None)
            self._break = True
        elif kind in ("fence", "code_block"):
            self._line()
            self._code_block(token.content.removesuffix("\n"), token.info)
            self._break = True
        elif kind == "hr":
            self._line()
            self._ops.append("———")
            self._break = True
        elif kind == "table_open":
            self._line()
            self._table = []
        elif kind.endswith("_close"):
            self._break = True

    def _code_block(self, code: str, info: str) -> None:
        if not code:
            return
        if self._quote:  # a pre entity may not sit inside a blockquote: show the lines as text
            self._ops.append(code)
            return
        language = info.split()[0] if info.strip() else ""
        open_tag = "<pre>"
        close_tag = "</pre>"
        if language and all(c.isalnum() or c in "+-#._" for c in language):
            open_tag = f'<pre><code class="language-{escape(language)}">'
            close_tag = "</code></pre>"
        self._ops += [_Tag(open_tag, close_tag, "pre", utf16_len(code)), code, None]

    def _table_token(self, token: Token) -> None:
        assert self._table is not None
        if token.type == "tr_open":
            self._table.append([])
        elif token.type == "inline":
            self._table[-1].append(_plain_inline(token.children or []))
        elif token.type == "table_close":
            rows, self._table = self._table, None
            self._table_block(rows)
            self._break = True

    def _table_block(self, rows: list[list[str]]) -> None:
        """A table as aligned monospace text: Telegram has no table entity."""
        text = "\n".join(aligned(rows, " | ", rule="-+-"))
        if not text.strip():
            return
        if self._quote:
            self._ops.append(text)
        else:
            self._ops += [_Tag("<pre>", "</pre>", "pre", utf16_len(text)), text, None]

    # -- inline level -----------------------------------------------------------------------

    def _open(self, open_tag: str, close_tag: str, kind: str) -> None:
        self._ops.append(_Tag(open_tag, close_tag, kind))
        self._inline.append(kind)

    def _close(self) -> None:
        self._ops.append(None)
        self._inline.pop()

    def _inline_tokens(self, tokens: list[Token]) -> None:
        for token in tokens:
            kind = token.type
            if kind == "text":
                self._ops.append(token.content)
            elif kind in ("softbreak", "hardbreak"):
                self._ops.append("\n")
            elif kind == "code_inline":
                if self._inline:  # code may not sit inside bold, italic or a link
                    self._ops.append(token.content)
                else:
                    self._ops += [_Tag("<code>", "</code>", "code"), token.content, None]
            elif kind.removesuffix("_open") in _STYLE and kind.endswith("_open"):
                self._open(*_STYLE[kind.removesuffix("_open")])
            elif kind.removesuffix("_close") in _STYLE and kind.endswith("_close"):
                self._close()
            elif kind == "link_open":
                href = str(token.attrGet("href") or "")
                linked = _linkable(href) and "a" not in self._inline
                self._links.append(linked)
                if linked:
                    self._open(f'<a href="{html.escape(href)}">', "</a>", "a")
            elif kind == "link_close":
                if self._links.pop():
                    self._close()
            elif kind == "image":
                self._image(token)

    def _image(self, token: Token) -> None:
        src = str(token.attrGet("src") or "")
        alt = _plain_inline(token.children or []) or src
        if _linkable(src) and "a" not in self._inline:
            self._ops += [_Tag(f'<a href="{html.escape(src)}">', "</a>", "a"), alt, None]
        else:
            self._ops.append(alt)


def _plain_inline(tokens: list[Token]) -> str:
    parts: list[str] = []
    for token in tokens:
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append(_plain_inline(token.children or []))
    return "".join(parts)


def _linkable(url: str) -> bool:
    """Only absolute links Telegram opens; a relative one has nowhere to point."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in _LINK_SCHEMES and bool(parts.netloc or parts.path)


# -- operations -> chunks -------------------------------------------------------------------


@dataclass(slots=True)
class _Open:
    tag: _Tag
    at: int  # index of its opening in the chunk's html, to drop it if nothing follows


class _Packer:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[Chunk] = []
        self._html: list[str] = []
        self._plain: list[str] = []
        self._size = 0
        self._stack: list[_Open] = []

    def add_block(self, block: list[_Op]) -> None:
        size = sum(utf16_len(op) for op in block if isinstance(op, str))
        separator = "\n\n" if self._size else ""
        if self._size and self._size + len(separator) + size > self.limit:
            self._flush()
            separator = ""
        self._text(separator)
        for op in block:
            if isinstance(op, _Tag):
                if op.size and self._size and self._size + op.size > self.limit >= op.size:
                    self._flush()  # the code block fits in a message of its own: keep it whole
                self._stack.append(_Open(op, len(self._html)))
                self._html.append(op.open)
            elif op is None:
                self._close_one()
            else:
                self._split_text(op)

    def finish(self) -> list[Chunk]:
        self._flush()
        return self.chunks

    def _close_one(self) -> None:
        opened = self._stack.pop()
        if opened.at == len(self._html) - 1:
            self._html.pop()  # an empty entity: leave it out
        else:
            self._html.append(opened.tag.close)

    def _text(self, text: str) -> None:
        if text:
            self._html.append(escape(text))
            self._plain.append(text)
            self._size += utf16_len(text)

    def _split_text(self, text: str) -> None:
        while text:
            room = self.limit - self._size
            if utf16_prefix(text, room) == len(text):  # measures no more than the room
                self._text(text)
                return
            # An empty chunk has room for a character (MIN_LIMIT): every pass takes some.
            head, text = _cut(text, room)
            self._text(head)
            self._flush()

    def _flush(self) -> None:
        plain = "".join(self._plain)
        if plain.strip():
            closing = "".join(o.tag.close for o in reversed(self._stack))
            self.chunks.append(Chunk("".join(self._html) + closing, plain))
        self._html, self._plain, self._size = [], [], 0
        for opened in self._stack:  # reopen what the next chunk continues
            opened.at = len(self._html)
            self._html.append(opened.tag.open)


def _cut(text: str, room: int) -> tuple[str, str]:
    """Split ``text`` so that the head fits ``room`` UTF-16 units: at the last line end that
    fits, else the last space, else anywhere (never inside a surrogate pair). The separator
    itself is dropped: the message boundary replaces it.
    """
    fit = utf16_prefix(text, room)
    if fit == 0:
        return "", text
    for separator in ("\n", " "):
        at = text.rfind(separator, 0, fit + 1)
        if at > 0:
            return text[:at], text[at + 1 :]
    return text[:fit], text[fit:]
