"""Markdown -> Telegram HTML: what the user sees, checked with the fake's Telegram HTML parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.telegram.render import LIMIT, Chunk, _parsed, _plain, preview, render
from contract import utf16_len

from .fake_bot_api import ApiError, parse_html


def seen(chunk: Chunk) -> str:
    """What Telegram shows for the chunk; the chunk's plain text must say the same."""
    text, _ = parse_html(chunk.html)
    assert text == chunk.plain
    return text


def kinds(chunk: Chunk) -> list[str]:
    return [e["type"] for e in parse_html(chunk.html)[1]]


def test_markup_becomes_entities_and_text_is_escaped() -> None:
    [chunk] = render(
        "**bold** _it_ ~~gone~~ `a<b>&c` [site](https://example.com/?a=1&b=2) 1 < 2 & 3 > 2"
    )
    assert seen(chunk) == "bold it gone a<b>&c site 1 < 2 & 3 > 2"
    entities = parse_html(chunk.html)[1]
    assert [e["type"] for e in entities] == ["bold", "italic", "strikethrough", "code", "text_link"]
    assert entities[-1]["url"] == "https://example.com/?a=1&b=2"


def test_blocks_lists_quotes_and_code() -> None:
    markdown = (
        "# Title\n\npara one\nline two\n\n- a\n- b\n  1. x\n  2. y\n\n> quoted **b**\n\n"
        "```python\nif a < b:\n    pass\n```\n"
    )
    [chunk] = render(markdown)
    assert seen(chunk) == (
        "Title\n\npara one\nline two\n\n• a\n• b\n  1. x\n  2. y\n\nquoted b\n\nif a < b:\n    pass"
    )
    assert kinds(chunk) == ["bold", "blockquote", "bold", "pre"]
    assert parse_html(chunk.html)[1][-1]["language"] == "python"


def test_raw_html_in_the_markdown_is_shown_as_text() -> None:
    [chunk] = render("<b>not bold</b> <script>x</script>")
    assert seen(chunk) == "<b>not bold</b> <script>x</script>"
    assert kinds(chunk) == []


def test_telegram_nesting_rules_hold() -> None:
    # Code inside bold or a link, a link inside a link, a code block inside a quote and nested
    # quotes are all refused by Telegram: the renderer shows them as text instead.
    markdown = (
        "**bold `code`** [`x`](https://a.example) > quote\n\n> > inner\n>\n> ```\n> code\n> ```"
    )
    for chunk in render(markdown):
        seen(chunk)  # parses: no nesting Telegram refuses


def test_relative_links_and_images_keep_their_text() -> None:
    [chunk] = render("[docs](docs/x.md) ![a cat](https://e.example/cat.png)")
    assert seen(chunk) == "docs a cat"
    assert kinds(chunk) == ["text_link"]


def test_a_table_is_aligned_monospace() -> None:
    [chunk] = render("| a | long |\n|---|---|\n| 1 | 2 |")
    assert seen(chunk) == "a | long\n--+-----\n1 | 2"
    assert kinds(chunk) == ["pre"]


def test_long_text_is_cut_at_line_ends_within_the_limit() -> None:
    lines = [f"line {i} " + "x" * 50 for i in range(200)]
    chunks = render("\n\n".join(lines))
    assert len(chunks) > 1
    assert all(len(seen(c)) <= LIMIT for c in chunks)
    # Nothing lost, nothing reordered: the cuts fall on the blank lines between paragraphs.
    assert "\n\n".join(c.plain for c in chunks) == "\n\n".join(lines)


def test_a_code_block_that_fits_is_never_cut() -> None:
    code = "\n".join(f"print({i})" for i in range(300))  # about 3,000 characters
    chunks = render("intro " * 300 + "\n\n```\n" + code + "\n```\n\nafter")
    holding = [c for c in chunks if "print(0)" in c.plain]
    assert len(holding) == 1 and code in holding[0].plain
    assert all(len(seen(c)) <= LIMIT for c in chunks)


def test_an_oversized_code_block_is_closed_and_reopened() -> None:
    code = "\n".join(f"value_{i} = {i}" for i in range(1000))
    chunks = render("```py\n" + code + "\n```")
    assert len(chunks) >= 3
    for chunk in chunks:
        assert len(seen(chunk)) <= LIMIT
        assert kinds(chunk) == ["pre"]  # every chunk is one whole code block
    assert "\n".join(c.plain for c in chunks) == code


def test_astral_characters_count_twice() -> None:
    chunks = render("😀" * 3000)
    assert len(chunks) == 2
    assert all(utf16_len(c.plain) <= LIMIT for c in chunks)
    assert "".join(c.plain for c in chunks) == "😀" * 3000


def test_an_entity_is_closed_at_a_cut_and_reopened_after() -> None:
    chunks = render("**" + ("word " * 1500).strip() + "**")
    assert len(chunks) == 2
    assert all(kinds(c) == ["bold"] for c in chunks)


def test_blank_markdown_renders_nothing_and_preview_is_the_last_chunk() -> None:
    assert render("  \n\n ") == []
    assert preview("") is None
    long = "a " * 3000
    assert preview(long) == render(long)[-1]


def test_the_fake_refuses_what_telegram_refuses() -> None:
    refused = [
        "<b>open",
        "<x>y</x>",
        "<b><i>a</b></i>",
        "<code><b>a</b></code>",
        "<b><code>a</code></b>",
        '<a href="https://a.example"><code>a</code></a>',
        "<blockquote><blockquote>a</blockquote></blockquote>",
        "a < b",
    ]
    for bad in refused:
        with pytest.raises(ApiError, match="can't parse entities"):
            parse_html(bad)


_MARKDOWN = st.text(alphabet=st.sampled_from(list("ab *_`~[]()#>-|!<&\n\t1.😀")), max_size=300)


@settings(max_examples=300, deadline=None)
@given(_MARKDOWN, st.integers(min_value=8, max_value=80))
def test_any_markdown_gives_chunks_telegram_accepts(markdown: str, limit: int) -> None:
    for chunk in render(markdown, limit):
        assert utf16_len(seen(chunk)) <= limit
        assert chunk.plain.strip()


# Pieces of short replies: Markdown's marks, spaces of every kind, any character.
_SHORT = st.lists(
    st.one_of(
        st.sampled_from(list("ab *_`~[]()#>-|!<&=+{}\\\n\t1.:/'\"😀")),
        st.sampled_from(list("\u00a0\u200d\u2028\u0000é\ufe0f")),
        st.sampled_from(["http://a.b", "&amp;", "1. ", "1) ", "- ", "---", "  "]),
        st.characters(),
    ),
    min_size=1,
    max_size=20,
).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_SHORT)
def test_text_without_markup_skips_the_parser_and_renders_the_same(text: str) -> None:
    if _plain(text, LIMIT):
        assert _parsed(text, LIMIT) == render(text) == [Chunk(text, text)]
    else:
        assert render(text) == _parsed(text, LIMIT)
