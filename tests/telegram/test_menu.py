"""The command menu: names Telegram accepts, deterministic collisions, and names typed back."""

from __future__ import annotations

import logging
import time

import pytest

from channels.telegram.menu import MAX_COMMANDS, NAME, Menu, telegram_name
from contract import Command, utf16_len

HOST = [Command(name=n, description=f"{n} it", source="gateway") for n in ("help", "new")]


def names(menu: Menu) -> list[str]:
    return [name for name, _ in menu.commands]


@pytest.mark.parametrize(
    ("name", "mapped"),
    [
        ("deploy", "deploy"),
        ("Deploy", "deploy"),
        ("pr-review", "pr_review"),
        ("skill:triage", "skill_triage"),
        ("memory show", "memory_show"),
        ("v1.2", "v1_2"),
        ("café", "cafe"),
        ("a" * 40, "a" * 32),
        ("😀", None),
    ],
)
def test_names_map_to_what_telegram_accepts(name: str, mapped: str | None) -> None:
    assert telegram_name(name) == mapped
    if mapped is not None:
        assert NAME.fullmatch(mapped)


def test_collisions_are_resolved_deterministically_and_valid_names_keep_theirs() -> None:
    inventory = [
        Command(name="pr-review", description="dash"),
        Command(name="pr_review", description="underscore"),
        Command(name="pr:review", description="colon"),
        Command(name="x" * 31 + "-a", description="long one"),
        Command(name="x" * 31 + ":a", description="long two"),
    ]
    menu = Menu.build(inventory)
    # 33 characters: cut to 32, and the second one makes room for its suffix.
    expected = ["pr_review_2", "pr_review", "pr_review_3", "x" * 31, "x" * 30 + "_2"]
    assert names(menu) == expected
    assert menu.original["pr_review"] == "pr_review"  # the real one is not displaced
    assert menu.original["pr_review_2"] == "pr-review"
    assert Menu.build(inventory) == menu
    assert all(NAME.fullmatch(n) for n in names(menu))


def test_host_commands_come_first_and_shadow_runtime_namesakes() -> None:
    inventory = [
        *HOST,
        Command(name="help", description="runtime help"),
        Command(name="go", description="Go"),
    ]
    menu = Menu.build(inventory)
    assert menu.commands == (("help", "help it"), ("new", "new it"), ("go", "Go"))


def test_at_most_100_commands_and_unmappable_names_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = [Command(name=f"cmd{i}", description="d") for i in range(150)]
    with caplog.at_level(logging.WARNING, logger="slashgate.telegram"):
        menu = Menu.build([*HOST, Command(name="😀", description="smile"), *runtime])
    assert len(menu.commands) == MAX_COMMANDS
    assert names(menu)[:3] == ["help", "new", "cmd0"]
    assert menu.skipped == ("😀",)
    assert "😀" in caplog.text and "cmd149" in caplog.text


def test_descriptions_are_one_line_of_1_to_256_characters() -> None:
    menu = Menu.build(
        [
            Command(name="empty", description="", hint="file name"),
            Command(name="bare", description="  "),
            Command(name="lines", description="first\n  second\tthird"),
            Command(name="long", description="d" * 300),
        ]
    )
    described = dict(menu.commands)
    assert described["empty"] == "<file name>"  # the hint, in its notation
    assert described["bare"] == "bare"
    assert described["lines"] == "first second third"
    assert len(described["long"]) == 256 and described["long"].endswith("…")


def test_a_huge_description_is_cut_at_once_without_splitting_a_character() -> None:
    # Cut in the event loop, at start and on every change: it must not grow with the text.
    started = time.perf_counter()
    [(_, text)] = Menu.build([Command(name="big", description="é😀" * 20_000)]).commands
    assert time.perf_counter() - started < 0.5  # cutting one character at a time took seconds
    assert text == "é😀" * 85 + "…"  # 255 UTF-16 units, then the ellipsis
    assert utf16_len(text) == 256


MENU = Menu.build(
    [
        Command(name="pr-review", description="Review"),
        Command(name="memory show", description="Show memory"),
        Command(name="deploy", description="Deploy"),
    ]
)


@pytest.mark.parametrize(
    ("typed", "core_sees"),
    [
        ("/pr_review 123 in /worktree", "/pr-review 123 in /worktree"),
        ("/PR_REVIEW", "/pr-review"),
        ("  /pr_review@gw_bot  12 ", "  /pr-review@gw_bot  12 "),
        ("/memory_show all", "/memory show all"),
        ("/memory_show@gw_bot all", "/memory@gw_bot show all"),
        ("/deploy prod", "/deploy prod"),
        ("/pr_reviews 1", "/pr_reviews 1"),
        ("//pr_review", "//pr_review"),
        ("/pr_review/x", "/pr_review/x"),
        ("see /pr_review", "see /pr_review"),
        ("/start", "/help"),
        ("/start@gw_bot deep-link-payload", "/help@gw_bot deep-link-payload"),
    ],
)
def test_a_menu_name_typed_back_becomes_the_original_command(typed: str, core_sees: str) -> None:
    assert MENU.rewrite(typed) == core_sees


def test_start_stays_start_when_the_inventory_has_one() -> None:
    menu = Menu.build([Command(name="start", description="Start a job")])
    assert menu.rewrite("/start now") == "/start now"
