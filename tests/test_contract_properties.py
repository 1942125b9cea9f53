"""Properties over arbitrary Unicode: the contract never raises and its spans are exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contract import Command, SlashContract, composer_input_problems, strict_payload, utf16_len

CONTRACT = SlashContract(
    commands=[
        Command(name="deploy", hint="environment"),
        Command(name="pr-review"),
        Command(name="worktree"),
        Command(name="skill:triage"),
        Command(name="memory show"),
    ],
    interactive_only={"settings"},
    host_commands=[Command(name="help", source="gateway")],
    bot_username="gw_bot",
)

# Text that often looks like the contract's syntax, mixed with any Unicode at all.
_PIECES = st.sampled_from(
    [
        "/",
        "//",
        "/deploy",
        "/DEPLOY",
        "/memory",
        " show",
        "@gw_bot",
        "@other",
        "@file:",
        "@branch:",
        "@symbol:",
        "src/a.py",
        ",",
        ".",
        ")",
        " ",
        "\n",
        "\t",
        "\u00a0",
        "\u2028",
        "👍",
        "𝔘",
        "é",
        "/worktree",
        "/help",
        "/settings",
        "/pr-review",
        "!",
    ]
)
TEXT = st.one_of(
    st.text(),
    st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=12).map("".join),
)
WHITE = st.text(alphabet=st.sampled_from(" \t\n\r\u00a0\u2003\u3000\x0b\x0c"), max_size=4)


def js_slice(source: str, start: int, end: int) -> str:
    """What JavaScript's ``source.slice(start, end)`` gives, by UTF-16 code units."""
    units = source.encode("utf-16-le", "surrogatepass")
    return units[2 * start : 2 * end].decode("utf-16-le", "surrogatepass")


@settings(max_examples=400)
@given(TEXT)
def test_nodes_cover_the_source_exactly_in_utf16_units(text: str) -> None:
    payload = CONTRACT.classify(text).payload
    nodes = payload.nodes or ()
    assert payload.source == text
    assert "".join(n.raw for n in nodes) == text
    position = 0
    for node in nodes:
        assert node.start == position, "nodes are contiguous and ordered"
        assert node.end >= node.start
        assert js_slice(text, node.start, node.end) == node.raw
        position = node.end
    assert position == utf16_len(text)
    data = payload.model_dump(mode="json", exclude_none=True)
    assert composer_input_problems(data, strict_names=False) == []


@settings(max_examples=300)
@given(TEXT)
def test_strict_lowering_always_passes_the_strict_runtime_rules(text: str) -> None:
    lowered = strict_payload(CONTRACT.classify(text).payload)
    assert lowered.source == text
    assert composer_input_problems(lowered.model_dump(mode="json", exclude_none=True)) == []


@settings(max_examples=400)
@given(TEXT, WHITE)
def test_classification_ignores_trailing_white_space(text: str, tail: str) -> None:
    a, b = CONTRACT.classify(text), CONTRACT.classify(text + tail)
    assert (a.kind, a.command, a.typed, a.args, a.for_other_bot, a.source) == (
        b.kind,
        b.command,
        b.typed,
        b.args,
        b.for_other_bot,
        b.source,
    )


@settings(max_examples=200)
@given(WHITE, TEXT)
def test_leading_white_space_never_changes_the_command(lead: str, text: str) -> None:
    a, b = CONTRACT.classify(text), CONTRACT.classify(lead + text)
    assert (a.kind, a.command, a.args) == (b.kind, b.command, b.args)


@given(st.text())
def test_rejection_text_exists_exactly_for_rejected_kinds(text: str) -> None:
    result = CONTRACT.classify(text)
    rejected = result.kind in ("invalid", "unsupported", "interactive_only")
    assert (CONTRACT.rejection(result) is not None) == rejected


@given(st.text(), st.integers(min_value=0, max_value=40))
def test_utf16_prefix_is_the_longest_that_fits(text: str, units: int) -> None:
    from contract import utf16_prefix

    n = utf16_prefix(text, units)
    assert utf16_len(text[:n]) <= units
    assert n == len(text) or utf16_len(text[: n + 1]) > units
