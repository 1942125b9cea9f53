"""Outbound text: the core's Markdown rendered as Slack mrkdwn (cut under Slack's limits by
channels/text.py).

Slack parses ``&``, ``<`` and ``>`` as control characters, so every piece of text is escaped
and only the markup this module writes (``<url|label>``, a quote's leading ``>``) stays raw.
"""

from __future__ import annotations

import re

from markdown_it.tree import SyntaxTreeNode

from channels.markdown import PARSER, aligned
from channels.text import FENCE

# chat.postMessage: Slack advises keeping ``text`` under 4,000 characters (it truncates
# at 40,000); counted in UTF-16 units, as Slack's JavaScript clients count them.
TEXT_LIMIT = 4000
# Block Kit: a section's or a context element's text; past it Slack answers invalid_blocks.
SECTION_LIMIT = 3000
_BULLETS = ("•", "◦", "▪")
# One line that starts with a letter and holds only letters, digits, spaces and punctuation
# that CommonMark leaves alone inside a line, with no space at its end: it renders as
# itself, unparsed (a reply such as "hi" costs no Markdown parse).
_PLAIN = re.compile(r"[^\W\d_](?:[^\W_]|[ ,.;:?!'\"()/#+\-=|%$^{}@])*(?<! )")


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_mrkdwn(markdown: str) -> str:
    """Render Markdown for Slack: ``**bold**`` -> ``*bold*``, ``[a](u)`` -> ``<u|a>``, ..."""
    if _PLAIN.fullmatch(markdown):
        return markdown
    tree = SyntaxTreeNode(PARSER.parse(markdown))
    return _blocks(tree.children, depth=0).strip("\n")


def _blocks(nodes: list[SyntaxTreeNode], depth: int, tight: bool = False) -> str:
    parts = [_block(node, depth) for node in nodes]
    return ("\n" if tight else "\n\n").join(p for p in parts if p)


def _block(node: SyntaxTreeNode, depth: int) -> str:
    kind = node.type
    if kind == "paragraph":
        return _inline(node.children)
    if kind == "heading":
        return f"*{_inline(node.children)}*"
    if kind in ("bullet_list", "ordered_list"):
        return _list(node, depth)
    if kind == "blockquote":
        inner = _blocks(node.children, depth)
        return "\n".join(">" + (" " + line if line else "") for line in inner.split("\n"))
    if kind in ("fence", "code_block"):
        return f"{FENCE}\n{escape(node.content.rstrip(chr(10)))}\n{FENCE}"
    if kind == "hr":
        return "──────────"
    if kind == "table":
        return _table(node)
    if kind == "html_block":
        return escape(node.content.rstrip("\n"))
    return _blocks(node.children, depth)


def _list(node: SyntaxTreeNode, depth: int) -> str:
    ordered = node.type == "ordered_list"
    number = int(node.attrs.get("start", 1)) if ordered else 0
    items = []
    for offset, item in enumerate(node.children):
        marker = f"{number + offset}." if ordered else _BULLETS[depth % len(_BULLETS)]
        # Markdown-it marks paragraphs of tight lists hidden: join their blocks with one newline.
        tight = all(child.hidden for child in item.children if child.type == "paragraph")
        body = _blocks(item.children, depth + 1, tight=tight)
        pad = " " * (len(marker) + 1)
        lines = body.split("\n") or [""]
        items.append("\n".join([f"{marker} {lines[0]}", *(pad + line for line in lines[1:])]))
    return "\n".join(items)


def _table(node: SyntaxTreeNode) -> str:
    rows = [
        [_plain(cell.children) for cell in row.children]
        for section in node.children
        for row in section.children
    ]
    return f"{FENCE}\n{escape(chr(10).join(aligned(rows, '  ')))}\n{FENCE}"


def _plain(nodes: list[SyntaxTreeNode]) -> str:
    """Inline content without markup (table cells sit in a code block)."""
    out = []
    for node in nodes:
        if node.type in ("text", "code_inline"):
            out.append(node.content)
        elif node.type in ("softbreak", "hardbreak"):
            out.append(" ")
        else:
            out.append(_plain(node.children))
    return "".join(out)


def _inline(nodes: list[SyntaxTreeNode]) -> str:
    out = []
    for node in nodes:
        kind = node.type
        if kind == "inline":
            out.append(_inline(node.children))
        elif kind == "text":
            out.append(escape(node.content))
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "code_inline":
            out.append(f"`{escape(node.content)}`")
        elif kind == "strong":
            out.append(f"*{_inline(node.children)}*")
        elif kind == "em":
            out.append(f"_{_inline(node.children)}_")
        elif kind == "s":
            out.append(f"~{_inline(node.children)}~")
        elif kind == "link":
            out.append(_link(str(node.attrs.get("href", "")), _inline(node.children)))
        elif kind == "image":
            out.append(_link(str(node.attrs.get("src", "")), escape(_plain(node.children))))
        else:  # html_inline and anything new: shown as the text it is
            out.append(escape(node.content))
    return "".join(out)


def _link(url: str, label: str) -> str:
    target = escape(url)
    if not label or label == target or label == escape(url.removeprefix("mailto:")):
        return f"<{target}>"
    return f"<{target}|{label}>"
