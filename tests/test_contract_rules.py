"""The contract's rules one by one, beyond the shared corpus."""

from __future__ import annotations

from typing import Any

import pytest

from contract import (
    Catalog,
    Command,
    CommandRegistry,
    ComposerInputError,
    SlashContract,
    categorize,
    check_composer_input,
    composer_input_problems,
    strict_payload,
)


def nodes(contract: SlashContract, text: str) -> list[tuple[str, str]]:
    """(kind, raw) pairs of the payload: enough to see where the boundaries fall."""
    return [(n.kind, n.raw) for n in contract.classify(text).payload.nodes or ()]


@pytest.fixture
def contract() -> SlashContract:
    return SlashContract(
        commands=[
            Command(name="deploy"),
            Command(name="memory"),
            Command(name="memory show"),
            Command(name="memory show all"),
            Command(name="status", description="the agent's own status"),
        ],
        interactive_only={"Settings", "deploy"},
        host_commands=[Command(name="status", source="gateway")],
        bot_username="@GW_Bot",
    )


def test_host_command_wins_over_runtime_which_wins_over_interactive_only(
    contract: SlashContract,
) -> None:
    status = contract.classify("/status")
    assert (status.kind, status.source) == ("supported", "gateway")
    deploy = contract.classify("/deploy")
    assert (deploy.kind, deploy.source) == ("supported", "runtime")
    settings = contract.classify("/SETTINGS now")
    assert (settings.kind, settings.command, settings.args) == (
        "interactive_only",
        "settings",
        "now",
    )


def test_multi_word_names_match_longest_first(contract: SlashContract) -> None:
    assert contract.classify("/memory show all of it").command == "memory show all"
    assert contract.classify("/memory show everything").command == "memory show"
    assert contract.classify("/Memory\tSHOW  x").args == "x"
    assert contract.classify("/memory shown").command == "memory"
    assert nodes(contract, "/memory show x")[0] == ("slash_command", "/memory show")


def test_addressee_compares_case_insensitively_and_drops_other_bots(
    contract: SlashContract,
) -> None:
    assert contract.classify("/deploy@gw_bot").for_other_bot is False
    assert contract.classify("/deploy@GW_BOT").for_other_bot is False
    assert contract.classify("/deploy@someone_else").for_other_bot is True
    no_username = SlashContract(commands=[Command(name="deploy")])
    assert no_username.classify("/deploy@anyone").for_other_bot is False


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("/@gw_bot", "invalid"),
        ("/\tdeploy", "invalid"),
        ("/😀", "invalid"),
        ("/-x", "invalid"),
        ("/a/b", "not_slash"),
        ("/deploy/now", "not_slash"),
        ("\u3000\n/deploy", "supported"),
        ("//", "not_slash"),
        ("", "not_slash"),
        ("   ", "not_slash"),
        ("/x.y:z-1_2", "unsupported"),
    ],
)
def test_leading_token_edge_cases(contract: SlashContract, text: str, kind: str) -> None:
    assert contract.classify(text).kind == kind


def test_inline_commands_need_a_boundary_and_a_known_name(contract: SlashContract) -> None:
    assert nodes(contract, "try /deploy.") == [
        ("text", "try "),
        ("slash_command", "/deploy"),
        ("text", "."),
    ]
    assert nodes(contract, "a/deploy b") == [("text", "a/deploy b")]
    assert nodes(contract, "run /deployx") == [("text", "run /deployx")]
    assert nodes(contract, "(/deploy)") == [("text", "(/deploy)")]
    assert nodes(contract, "then /memory show!") == [
        ("text", "then "),
        ("slash_command", "/memory show"),
        ("text", "!"),
    ]


def test_references_become_nodes_and_mentions_stay_text(contract: SlashContract) -> None:
    text = "see @symbol:Foo.bar, @branch:main) and @file:a.py; mail a@b.c or @alice @file:"
    got = nodes(contract, text)
    assert ("symbol", "@symbol:Foo.bar") in got
    assert ("branch", "@branch:main") in got
    assert ("file", "@file:a.py") in got
    assert all("alice" not in raw or kind == "text" for kind, raw in got)
    assert got[-1] == ("text", "; mail a@b.c or @alice @file:")


def test_emoji_spans_count_utf16_units() -> None:
    c = SlashContract(commands=[Command(name="deploy")])
    payload = c.classify("👍👍 /deploy @file:ü.py").payload.model_dump(
        mode="json", exclude_none=True
    )
    assert payload["nodes"] == [
        {"kind": "text", "start": 0, "end": 5, "raw": "👍👍 "},
        {"kind": "slash_command", "start": 5, "end": 12, "raw": "/deploy", "name": "deploy"},
        {"kind": "text", "start": 12, "end": 13, "raw": " "},
        {"kind": "file", "start": 13, "end": 23, "raw": "@file:ü.py", "path": "ü.py"},
    ]


def test_catalog_texts_and_overrides() -> None:
    c = SlashContract()
    assert c.failure("busy", "deploy") == (
        "Slash command /deploy could not run because the session is busy. Retry in a moment."
    )
    assert c.failure("timeout", "deploy") == "Slash command /deploy timed out. Retry in a moment."
    assert c.failure("generic", "deploy", error="boom") == "Slash command /deploy failed: boom"
    assert c.failure("generic", "deploy", error="") == "Slash command /deploy failed: failed"
    custom = SlashContract(catalog=Catalog(unsupported="No /{name} here."))
    assert custom.rejection(custom.classify("/x")) == "No /x here."


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Unknown command: /x", "unsupported"),
        ("skill not found", "unsupported"),
        ("Agent is already processing. Specify streamingBehavior", "busy"),
        ("unsupported command while busy", "unsupported"),
        ("Agent is already processing", "busy"),
        ("session busy", "busy"),
        ("request timed out", "timeout"),
        ("TIMEOUT", "timeout"),
        ("disk full", "generic"),
        ("", "generic"),
        (None, "generic"),
    ],
)
def test_categorize_first_match_wins(text: str | None, category: str) -> None:
    assert categorize(text) == category


def test_inventory_layering_static_dynamic() -> None:
    registry = CommandRegistry([Command(name="a", description="static a"), Command(name="b")])
    registry.register(Command(name="A", description="dynamic a"))
    registry.register(Command(name="c"))
    listed = registry.list()
    assert [(c.name, c.source) for c in listed] == [
        ("A", "dynamic"),
        ("b", "static"),
        ("c", "dynamic"),
    ]
    assert registry.unregister("a") is True
    assert registry.get("a") == Command(name="a", description="static a", source="static")
    assert registry.unregister("a") is False, "a static command cannot be unregistered"
    assert [c.name for c in registry.list()] == ["a", "b", "c"]


def _node(kind: str, start: int, end: int, raw: str, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "start": start, "end": end, "raw": raw, **extra}


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"source": 1}, "source must be a string"),
        ({"source": "ab", "nodes": [_node("text", 0, 3, "ab")]}, "outside"),
        ({"source": "ab", "nodes": [_node("text", 0, 1, "b")]}, "raw does not equal"),
        ({"source": "ab", "nodes": [_node("text", True, 1, "a")]}, "integers"),
        ({"source": "ab", "nodes": [_node("text", 0.0, 1, "a")]}, "integers"),
        (
            {"source": "ab", "nodes": [_node("text", 1, 2, "b"), _node("text", 0, 1, "a")]},
            "overlaps",
        ),
        (
            {"source": "/A", "nodes": [_node("slash_command", 0, 2, "/A", name="A")]},
            "does not match",
        ),
        ({"source": "@file:", "nodes": [_node("file", 0, 6, "@file:", path="")]}, "non-empty"),
        ({"source": "x", "nodes": [_node("chip", 0, 1, "x")]}, "not a known node kind"),
        ({"source": "👍", "nodes": [_node("text", 0, 1, "👍")]}, "raw does not equal"),
    ],
)
def test_composer_input_validation_rules(payload: dict[str, Any], problem: str) -> None:
    problems = composer_input_problems(payload)
    assert any(problem in p for p in problems), problems
    with pytest.raises(ComposerInputError):
        check_composer_input(payload)


def test_strict_lowering_turns_unexpressible_names_into_text() -> None:
    c = SlashContract(commands=[Command(name="skill:triage"), Command(name="deploy")])
    lowered = strict_payload(c.classify("/skill:triage now /deploy").payload)
    assert [(n.kind, n.raw) for n in lowered.nodes or ()] == [
        ("text", "/skill:triage now "),
        ("slash_command", "/deploy"),
    ]
