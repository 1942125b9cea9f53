"""contract.complete: what fits at the cursor, as a composer shows it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contract import Command, Completion, complete, utf16_len

INVENTORY = (
    Command(name="help", description="List commands", source="gateway"),
    Command(name="cancel", description="Cancel the running turn", source="gateway"),
    Command(name="deploy", description="Deploy a build", hint="environment"),
    Command(name="dev", description="Start a dev server"),
    Command(name="pr-review", description="Review a pull request", hint="PR number"),
    Command(name="skill:triage", description="Triage an issue"),
    Command(name="memory show", description="Show memory"),
    Command(name="help", description="The agent's own help"),  # the gateway's wins
)
TUI = ("settings", "theme")


def names(result: Completion) -> list[str]:
    return [item.name for item in result.items]


def at(text: str, cursor: int | None = None, **kw: object) -> Completion:
    return complete(text, cursor, INVENTORY, TUI, **kw)  # type: ignore[arg-type]


def test_slash_alone_lists_everything_in_inventory_order_then_interactive_only() -> None:
    result = at("/")
    assert result.context == "command"
    assert names(result) == [
        "help", "cancel", "deploy", "dev", "pr-review", "skill:triage", "memory show",
        "settings", "theme",
    ]  # fmt: skip
    assert result.items[0].description == "List commands"  # one entry per name: the gateway's
    assert [i.interactive_only for i in result.items][-2:] == [True, True]
    assert (result.start, result.end, result.total) == (0, 1, 9)


def test_prefix_before_word_before_fuzzy() -> None:
    assert [(i.name, i.match) for i in at("/de").items] == [("dev", "prefix"), ("deploy", "prefix")]
    assert [(i.name, i.match) for i in at("/review").items] == [("pr-review", "word")]
    assert [(i.name, i.match) for i in at("/tri").items] == [("skill:triage", "word")]
    assert [(i.name, i.match) for i in at("/dpl").items] == [("deploy", "fuzzy")]
    exact = at("/DEV")
    assert [(i.name, i.match) for i in exact.items] == [("dev", "exact")]
    assert exact.query == "dev"


def test_an_item_carries_what_a_menu_shows_and_what_to_insert() -> None:
    [item] = at("/deplo").items
    assert item.model_dump(exclude_none=True) == {
        "kind": "command",
        "name": "deploy",
        "insert": "/deploy ",
        "description": "Deploy a build",
        "hint": "environment",
        "source": "runtime",
        "interactive_only": False,
        "match": "prefix",
    }


def test_the_span_is_the_whole_token_under_the_cursor() -> None:
    result = at("/de prod", 2)
    assert (result.start, result.end, result.query) == (0, 3, "d")
    assert "deploy" in names(result)


def test_multi_word_names_complete_across_the_space() -> None:
    for text in ("/memory", "/memory ", "/memory s", "/Memory  SH"):
        result = at(text)
        assert names(result) == ["memory show"], text
        assert (result.start, result.end) == (0, len(text))
    assert at("/memory x").context == "none"


def test_after_a_supported_command_come_its_arguments() -> None:
    for text in ("/deploy ", "/deploy prod", "  /Deploy staging now", "/deploy@gw_bot x"):
        result = at(text)
        assert result.context == "arguments", text
        assert result.command is not None and result.command.hint == "environment"
        assert result.items == ()
    assert at("/memory show all").command.name == "memory show"  # type: ignore[union-attr]
    assert at("/nope ").context == "none"


def test_later_commands_complete_from_the_inventory_only() -> None:
    result = at("please /pr")
    assert (result.context, result.start, result.end) == ("command", 7, 10)
    assert names(result) == ["pr-review"]
    assert at("/deploy then /canc").items[0].name == "cancel"
    assert at("hi /set").context == "none"  # interactive-only is never a later node
    assert at("see/de").context == "none"  # not at a token boundary


def test_reference_prefixes() -> None:
    result = at("look at @")
    assert result.context == "reference"
    assert [(i.name, i.insert) for i in result.items] == [
        ("@file:", "@file:"),
        ("@branch:", "@branch:"),
        ("@symbol:", "@symbol:"),
    ]
    assert (result.start, result.end) == (8, 9)
    assert names(at("/deploy @b")) == ["@branch:"]
    assert at("@file:src/app.py").context == "none"
    assert at("@alice").context == "none"


@pytest.mark.parametrize(
    "text", ["hello", "", "//deploy", "/usr/bin", "/ de", "/deploy@bot", "/de!", "/zzz"]
)
def test_nothing_to_offer(text: str) -> None:
    result = at(text)
    assert (result.context, result.items) == ("none", ())
    assert result.start == result.end == utf16_len(text)


def test_cursor_counts_utf16_code_units() -> None:
    text = "👍 /de"  # the emoji is two UTF-16 units
    result = at(text, 6)
    assert (result.context, result.start, result.end) == ("command", 3, 6)
    assert at(text, 4).query == ""  # just after the "/"
    with pytest.raises(ValueError, match="outside the text"):
        at(text, 7)
    with pytest.raises(ValueError):
        at(text, -1)


def test_limit_keeps_the_best_and_counts_all() -> None:
    result = at("/", limit=2)
    assert names(result) == ["help", "cancel"]
    assert result.total == 9


@given(st.text(alphabet="/@ abdemoprsvy:-👍\n", max_size=20), st.data())
def test_any_text_and_cursor_gives_a_span_inside_the_text(text: str, data: st.DataObject) -> None:
    cursor = data.draw(st.integers(0, utf16_len(text)))
    result = at(text, cursor)
    assert 0 <= result.start <= result.end <= utf16_len(text)
    if result.context in ("command", "reference"):
        assert result.items and result.start <= cursor <= result.end
    else:
        assert result.items == ()
