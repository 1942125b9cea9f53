"""Total text transforms: every function on the reply path that cuts, renders, escapes or
measures text answers for any Unicode text (lone surrogates included) and any limit (0, 1,
negative, smaller than any prefix): a limit that leaves no room raises ValueError at once,
any other gives pieces that fit, with nothing lost, duplicated or reordered (the pieces
joined give the input, up to the separators dropped at a cut and the documented escaping).

The tests are coroutines so that the suite's loop watchdog (tests/loop_watchdog.py) guards
every example: a transform that loops fails within a second, with the stack where it spun,
instead of hanging the suite. The inputs are a few thousand characters at most, which every
transform handles in milliseconds.
"""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from channels.activity import Activity, cut
from channels.slack import activity as slack_activity
from channels.slack.manners import COMMAND_SHOWN, invocation_line
from channels.slack.markup import unescape
from channels.slack.mrkdwn import SECTION_LIMIT, TEXT_LIMIT, to_mrkdwn
from channels.slack.sink import render
from channels.slack.target import Target
from channels.telegram import activity as telegram_activity
from channels.telegram import render as telegram
from channels.text import FENCE, MIN_LIMIT, chunks, shorten
from contract import utf16_len, utf16_prefix, utf16_slice
from contract.utf16 import utf16_ends
from gateway.events import (
    PlanEntry,
    PlanUpdated,
    ReasoningDelta,
    RuntimeEvent,
    StatusChanged,
    ToolEnd,
    ToolStart,
)
from gateway.inbound import Reply

settings.register_profile("text-transforms", max_examples=150, deadline=None)
FAST = settings(settings.get_profile("text-transforms"))

# What Markdown, mrkdwn, HTML and the cutters treat specially, mixed into arbitrary text.
SPECIAL = [
    *"*_~`[]()<>&|#!-+=.\\:;\n \t\r\x00",
    *("```", "\n\n", "> ", "- ", "1. ", "&amp;", "&lt;", "<@U1|ann>", "<https://a.b|a b>"),
    *("[a](https://a.b)", "![i](https://a.b/i.png)", "| a | b |\n|---|---|\n", "    "),
    *("😀", "👩\u200d💻", "é", "e\u0301", "\u05e9\u05dc\u05d5\u05dd", "\u00a0", "\u2028"),
    *("\ud800", "\udfff", "\ufeff", "日本"),
]
CHAR = st.one_of(
    st.characters(codec=None),  # any code point, surrogates included
    st.sampled_from(SPECIAL),
    st.sampled_from(["x", "word", "\n", " "]),
)
TEXT = st.lists(CHAR, max_size=400).map("".join)
# Every kind of limit: below any room, tiny, around the minimum, and real-sized.
LIMIT = st.one_of(
    st.integers(-10, 40),
    st.integers(40, 600),
    st.sampled_from([-(2**31), 0, 1, 2, 3, 4, 5, TEXT_LIMIT, telegram.LIMIT]),
)
INVOCATION = st.one_of(TEXT, st.integers(0, 50_000).map(lambda n: "/deploy " + "a b" * n))
USER = st.from_regex(r"U[A-Z0-9]{1,20}", fullmatch=True)


def squeezed(text: str) -> str:
    """``text`` without white space: what a cut may drop."""
    return "".join(text.split())


# -- contract: UTF-16 measures ---------------------------------------------------------------


@FAST
@given(TEXT, LIMIT)
async def test_utf16_prefix_is_the_longest_prefix_that_fits_any_units(text, units):
    n = utf16_prefix(text, units)
    assert 0 <= n <= len(text)
    assert utf16_len(text[:n]) <= max(units, 0)
    assert n == len(text) or utf16_len(text[: n + 1]) > units


@FAST
@given(TEXT, st.integers(-500, 500), st.integers(-500, 500))
async def test_utf16_slice_is_javascripts_slice(text, start, end):
    units = [text.encode("utf-16-le", "surrogatepass")[i : i + 2] for i in range(0, 2000, 2)]
    units = units[: utf16_len(text)]
    got = utf16_slice(text, start, end).encode("utf-16-le", "surrogatepass")
    assert got == b"".join(units[start:end])  # a list slices as String.slice does


@FAST
@given(st.lists(TEXT, max_size=8))
async def test_utf16_ends_are_the_running_lengths(pieces):
    ends = utf16_ends(pieces)
    assert ends == [utf16_len("".join(pieces[: i + 1])) for i in range(len(pieces))]


# -- Slack: mrkdwn, chunks, previews, the invocation line ------------------------------------


def slack_entities_whole(text: str) -> bool:
    """Every ``&`` starts one of the three entities mrkdwn escapes with."""
    return re.search(r"&(?!amp;|lt;|gt;)", text) is None


def links_closed(text: str) -> bool:
    """Every raw ``<`` (markup mrkdwn writes) is closed before the next one opens."""
    return all(">" in part for part in text.split("<")[1:])


@FAST
@given(TEXT)
async def test_mrkdwn_escapes_every_control_character_it_does_not_write(markdown):
    rendered = to_mrkdwn(markdown)
    assert slack_entities_whole(rendered)
    assert links_closed(rendered)


@FAST
@given(TEXT, LIMIT)
@example("word " * 2000, 4)  # issue 21: looped for ever
@example("word " * 20, 5)  # issue 21: one-character pieces
@example("```\n" + "😀" * 40 + "\n```", MIN_LIMIT)
@example("```\n<" + "x" * 40 + ">\n```", MIN_LIMIT)
async def test_chunks_fit_and_keep_the_text_in_order(text, limit):
    if limit < MIN_LIMIT:
        with pytest.raises(ValueError, match="limit"):
            chunks(text, limit)
        return
    pieces = chunks(text, limit)
    assert pieces
    assert all(utf16_len(p) <= limit for p in pieces)
    # Only separators at the cuts go, and only the fences closed and reopened there come.
    assert squeezed("".join(pieces)).replace(FENCE, "") == squeezed(text).replace(FENCE, "")
    # At most a fence a cut, and each piece reads as a whole: fences in pairs except the last.
    assert "".join(pieces).count(FENCE) <= text.count(FENCE) + 2 * (len(pieces) - 1)
    assert all(p.count(FENCE) % 2 == 0 for p in pieces[:-1])


@FAST
@given(TEXT, LIMIT)
@example("see [the docs here](https://a.b/c) " * 40, 200)  # was cut inside the link
async def test_rendered_replies_cut_into_pieces_that_read_whole(markdown, limit):
    rendered = to_mrkdwn(markdown)
    if limit < MIN_LIMIT:
        return  # the test above: ValueError
    pieces = chunks(rendered, limit)
    assert all(utf16_len(p) <= limit for p in pieces)
    # A code block cut is closed and reopened, and no entity is cut in two.
    assert all(p.count(FENCE) % 2 == 0 for p in pieces[:-1]), pieces
    assert all(slack_entities_whole(p) for p in pieces), pieces
    # A link that fits in a quarter of the room is never cut in two.
    longest = max((len(m.group()) for m in re.finditer("<[^<>]*>", rendered)), default=0)
    if longest <= (limit - len(FENCE) - 1) // 4:
        assert all(links_closed(p) for p in pieces), pieces


@FAST
@given(TEXT, LIMIT)
@example("x" * 5000, 0)
async def test_shorten_fits_and_keeps_the_start(text, limit):
    if limit < MIN_LIMIT + 2:
        with pytest.raises(ValueError, match="limit"):
            shorten(text, limit)
        return
    short = shorten(text, limit)
    assert utf16_len(short) <= limit
    if utf16_len(text) <= limit:
        assert short == text
    else:
        assert short == chunks(text, limit - 2)[0] + " …"  # the first piece, marked as cut
        assert text.startswith(short.removesuffix(" …").removesuffix("\n" + FENCE))


@FAST
@given(INVOCATION, USER, TEXT)
@example("/deploy " + "x" * 5000, "U1", "got it")  # issue 21: froze the process
async def test_a_slash_commands_first_message_has_room_for_its_reply(command, user, markdown):
    target = Target(channel="C1", user=user, conversation="C1", invocation=command)
    lead = invocation_line(target)
    assert lead is not None
    assert utf16_len(lead) <= COMMAND_SHOWN + utf16_len(f"<@{user}> ran ``")
    # What SlackSink.final posts first: the lead, a newline, the reply's first piece.
    first = render(Reply(markdown, slash=True), TEXT_LIMIT - utf16_len(lead) - 1)[0]
    assert utf16_len(f"{lead}\n{first}") <= TEXT_LIMIT
    shown = lead.removeprefix(f"<@{user}> ran `").removesuffix("`")
    typed = command.replace("`", "'")
    assert shown == typed or typed.startswith(shown.removesuffix(" …"))


@FAST
@given(TEXT)
async def test_slack_unescape_undoes_escape(text):
    from channels.slack.mrkdwn import escape

    assert unescape(escape(text)) == text


# -- Telegram: HTML chunks and previews ------------------------------------------------------


def visible(chunk_html: str) -> str:
    """The text Telegram shows for ``chunk_html``: tags out, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", chunk_html))


@FAST
@given(TEXT, LIMIT)
@example("😀" * 10, 1)
@example("**" + "😀" * 10 + "**", 2)
async def test_telegram_chunks_fit_and_keep_the_text_in_order(markdown, limit):
    if limit < telegram.MIN_LIMIT:
        with pytest.raises(ValueError, match="limit"):
            telegram.render(markdown, limit)
        with pytest.raises(ValueError, match="limit"):
            telegram.preview(markdown, limit)
        return
    chunks_ = telegram.render(markdown, limit)
    assert all(utf16_len(c.plain) <= limit for c in chunks_)
    assert all(visible(c.html) == c.plain for c in chunks_)
    whole = telegram.render(markdown, 10**9)
    assert len(whole) <= 1
    assert squeezed("".join(c.plain for c in chunks_)) == squeezed("".join(c.plain for c in whole))
    assert telegram.preview(markdown, limit) == (chunks_[-1] if chunks_ else None)


# -- activity lines ---------------------------------------------------------------------------


@FAST
@given(TEXT, LIMIT)
async def test_activity_cut_fits(text, limit):
    if limit < 1:
        with pytest.raises(ValueError, match="limit"):
            cut(text, limit)
        return
    short = cut(text, limit)
    assert len(short) <= limit
    words = " ".join(text.split())
    assert short == words or words.startswith(short.removesuffix("…"))


# -- activity messages ------------------------------------------------------------------------

EVENT = st.one_of(
    st.builds(ToolStart, st.sampled_from(["t1", "t2", "t3", "t4", "t5", "t6", "t7"]), TEXT),
    st.builds(ToolEnd, st.sampled_from(["t1", "t2", "t3", "t4", "t5", "t6", "t7"]), output=TEXT),
    st.builds(PlanUpdated, st.lists(st.builds(PlanEntry, TEXT), max_size=25).map(tuple)),
    st.builds(PlanUpdated, text=TEXT | st.integers(0, 9000).map(lambda n: "- step\n" * n)),
    st.builds(ReasoningDelta, TEXT),
    st.builds(StatusChanged, st.sampled_from(["retrying", "paused", "error"]), detail=TEXT),
)


def activity_of(events: list[RuntimeEvent]) -> Activity:
    activity = Activity()
    for event in events:
        activity.apply(event)
    return activity


@FAST
@given(st.lists(EVENT, max_size=12))
async def test_slack_activity_blocks_fit_what_slack_takes(events):
    shown = slack_activity.activity_blocks(activity_of(events))
    if shown is None:
        return
    text, blocks = shown
    assert utf16_len(text) <= TEXT_LIMIT
    for block in blocks:
        texts = [e["text"] for e in block.get("elements", [])] + [block.get("text", {}).get("text")]
        assert all(utf16_len(t) <= SECTION_LIMIT for t in texts if t is not None), block


@FAST
@given(st.lists(EVENT, max_size=12))
@example([PlanUpdated(tuple(PlanEntry("😀" * 80) for _ in range(20))), ReasoningDelta("😀" * 999)])
async def test_telegram_activity_fits_a_message(events):
    chunk = telegram_activity.activity_chunk(activity_of(events))
    if chunk is not None:
        assert utf16_len(chunk.plain) <= telegram.LIMIT
        assert visible(chunk.html) == chunk.plain
