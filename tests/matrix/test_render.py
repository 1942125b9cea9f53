"""A reply's HTML without the Markdown parser, for plain words only: the same HTML the parser
gives, and the parser for anything it would read otherwise. A streamed reply's preview: its
first message, rendered alone.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels.matrix import render as render_module
from channels.matrix.render import HTML, LIMIT, PLAIN, html, preview, render

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


# Long texts of the shapes that cut differently: plain lines, a code fence across the limit,
# text whose HTML is far longer than itself (``&``), and one that fits.
LONG = (
    "word " * 10_000,
    "intro\n```\n" + "code line\n" * 3_000 + "```\nafter",
    "&" * 40_000,
    "short",
)


def test_a_preview_is_the_first_message_of_the_whole_text() -> None:
    for text in LONG:
        whole = render(text)[0]
        expected = whole if whole.body == text else render(whole.body + " …")[0]
        assert preview(text) == expected


def test_a_long_reply_s_preview_renders_its_first_message_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Rendered on the event loop at every edit of a streamed reply: the whole text each time
    # (300 KB: a second and more per edit) held every channel up.
    rendered: list[int] = []

    def counting(markdown: str) -> str:
        rendered.append(len(markdown))
        return real(markdown)

    real = render_module.html
    monkeypatch.setattr(render_module, "html", counting)
    assert preview("word " * 60_000) is not None
    assert sum(rendered) <= 3 * LIMIT


def test_an_image_off_the_homeserver_is_a_link_to_it() -> None:
    # The spec's HTML allows img of mxc:// sources only: clients show nothing for another.
    shown = html('see ![the chart](https://example.org/c.png "t") and ![m](mxc://hs/abc)')
    assert '<a href="https://example.org/c.png">the chart</a>' in shown
    assert '<img src="mxc://hs/abc" alt="m" />' in shown
    assert 'https://example.org/c.png" alt' not in shown
    assert html("![](https://e.org/a?x=1&y=2)") == (
        '<p><a href="https://e.org/a?x=1&amp;y=2">https://e.org/a?x=1&amp;y=2</a></p>'
    )
