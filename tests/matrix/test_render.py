"""A reply's HTML without the Markdown parser, for plain words only: the same HTML the parser
gives, and the parser for anything it would read otherwise.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from channels.matrix.render import HTML, PLAIN, html

# Letters and digits of several scripts, the characters Markdown and HTML read, and spaces,
# tabs and line breaks: most strings drawn are not plain, many are.
ALPHABET = st.sampled_from(list("aZ09éßж中٣²Ⅻ ") + list(" \t\n*_`#>-+=.!?()[]<>&\"'~|\\:;,/1"))


@given(st.text(ALPHABET, max_size=12))
def test_a_reply_renders_as_the_markdown_parser_renders_it(text: str) -> None:
    assert html(text) == HTML.render(text).rstrip("\n")


@given(st.lists(st.text(st.sampled_from(list("aZ09éßж中٣²Ⅻ")), min_size=1), min_size=1))
def test_plain_words_are_plain(words: list[str]) -> None:
    text = " ".join(words)
    assert PLAIN.fullmatch(text)
    assert html(text) == HTML.render(text).rstrip("\n") == f"<p>{text}</p>"


def test_what_markdown_reads_is_not_plain() -> None:
    for text in ("*a*", "1.", "a  b", " a", "a\nb", "a_b", "&amp;", "<b>", "# a", "a."):
        assert not PLAIN.fullmatch(text), text
