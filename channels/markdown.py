"""The core's replies are Markdown: CommonMark with strikethrough and tables, no raw HTML. The
pieces the channels' renderers share (Telegram HTML, Slack mrkdwn): the parser of that dialect,
and a table as aligned monospace text (neither platform has a table of its own).
"""

from __future__ import annotations

from markdown_it import MarkdownIt


def dialect(breaks: bool = False) -> MarkdownIt:
    """A parser of the dialect; ``breaks``: a single line break renders as one (``<br>``),
    not as CommonMark's soft break, which HTML shows as a space.
    """
    return MarkdownIt("commonmark", {"html": False, "breaks": breaks}).enable(
        ["strikethrough", "table"]
    )


PARSER = dialect()


def aligned(rows: list[list[str]], separator: str, rule: str | None = None) -> list[str]:
    """A table's rows (plain cells) as lines, each column as wide as its widest cell, cells
    joined by ``separator``; ``rule`` joins the dashes of a line under the header row.
    """
    columns = max((len(row) for row in rows), default=0)
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(columns)]
    lines = [separator.join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    if rule is not None and len(lines) > 1:
        lines.insert(1, rule.join("-" * w for w in widths))
    return lines
