"""Slack text in (markup decoded) and out (mrkdwn rendered, escaped, chunked)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels.slack.markup import command_source, normalize, umbrella_source
from channels.slack.mrkdwn import TEXT_LIMIT, to_mrkdwn
from channels.text import chunks
from contract import utf16_len


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<@UBOT> /deploy prod", "/deploy prod"),
        ("<@UBOT|slashgate>    /deploy prod", "   /deploy prod"),
        ("  <@UBOT>\n/deploy", "/deploy"),
        ("hey <@UBOT> there", "hey @UBOT there"),
        ("<@U2> first", "@U2 first"),
        ("ping <@U2|bob> in <#C1|ops> and <#C2>", "ping @bob in #ops and #C2"),
        (
            "<!here> <!channel> <!subteam^S1|@devs> <!date^1392734382^{date}|Feb 18>",
            "@here @channel @devs Feb 18",
        ),
        ("see <https://a.b/c?d=1&amp;e=2>", "see https://a.b/c?d=1&e=2"),
        ("see <https://a.b|the docs>", "see the docs (https://a.b)"),
        ("open <http://app.py|app.py> and <mailto:a@b.c|a@b.c>", "open app.py and a@b.c"),
        ("a &lt; b &amp;&amp; c &gt; d", "a < b && c > d"),
        ("literal &amp;lt; stays", "literal &lt; stays"),
        ("/deploy 👍 then /worktree", "/deploy 👍 then /worktree"),
    ],
)
def test_markup_is_decoded_and_the_own_mention_removed(raw, expected):
    assert normalize(raw, "UBOT") == expected


def test_slash_command_sources():
    assert umbrella_source("deploy prod") == "/deploy prod"
    assert umbrella_source("/deploy prod") == "/deploy prod"
    assert umbrella_source("") == "/"
    assert command_source("/deploy", "prod") == "/deploy prod"
    assert command_source("/deploy", "") == "/deploy"


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold** and *it* and ~~gone~~", "*bold* and _it_ and ~gone~"),
        ("a & b < c > d", "a &amp; b &lt; c &gt; d"),
        ("`x<y` and [docs](https://a.b/?q=1&r=2)", "`x&lt;y` and <https://a.b/?q=1&amp;r=2|docs>"),
        ("<https://a.b>", "<https://a.b>"),
        ("# Title\n\ntext", "*Title*\n\ntext"),
        ("- one\n- two\n  - three", "• one\n• two\n  ◦ three"),
        ("3. c\n4. d", "3. c\n4. d"),
        ("> quoted <b>", "> quoted &lt;b&gt;"),
        ("```py\nif a < b:\n    pass\n```", "```\nif a &lt; b:\n    pass\n```"),
        ("| a | bb |\n|---|---|\n| 1 | 2 |", "```\na  bb\n1  2\n```"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ],
)
def test_markdown_is_rendered_as_mrkdwn(markdown, mrkdwn):
    assert to_mrkdwn(markdown) == mrkdwn


INERT = [*"a1 ,.;:?!'\"()/#+-=|%$^{}@", "é", "日"]
MARKUP = [*"_*`[]<>&\\~\t", "**", "__", "~~", "](y)", "  ", "\u00a0", "\u0301"]


def test_one_line_renders_as_the_paragraph_it_is():
    # A line of plain words comes out as typed, without a Markdown parse: as parsed.
    for p, q in itertools.product(INERT + MARKUP, repeat=2):
        text = f"a{p}{q}b {p}b{q} c{q} {p} d {q}"
        assert to_mrkdwn(text) == to_mrkdwn(text + "\n\n"), text


@pytest.mark.parametrize("text", ["hi", "Hello, world!", "see http://a.b/c (or not)", "日本 2"])
def test_plain_words_come_out_as_typed(text):
    assert to_mrkdwn(text) == text


def test_chunks_split_at_paragraphs_and_keep_code_fences_balanced():
    text = to_mrkdwn("intro\n\n```\n" + "line & more\n" * 1000 + "```\n\nend")
    parts = chunks(text, TEXT_LIMIT)
    assert len(parts) > 1
    assert all(utf16_len(p) <= TEXT_LIMIT for p in parts)
    assert all(p.count("```") % 2 == 0 for p in parts)
    assert parts[0].startswith("intro")
    assert parts[-1].endswith("end")
    assert "".join(parts).count("line &amp; more") == 1000


@given(st.text(alphabet=st.sampled_from(list("ab &<>\n`*😀")), max_size=3000), st.integers(20, 400))
def test_chunks_fit_and_lose_nothing_but_separators(text, limit):
    rendered = to_mrkdwn(text)
    parts = chunks(rendered, limit)
    assert all(utf16_len(p) <= limit for p in parts)
    # Entities are never cut in two.
    assert all(
        not p.rstrip("`\n").endswith(("&", "&a", "&am", "&amp", "&l", "&lt", "&g", "&gt"))
        for p in parts
    )
    squeeze = "".join(rendered.split()).replace("```", "")
    assert "".join("".join(parts).split()).replace("```", "") == squeeze
