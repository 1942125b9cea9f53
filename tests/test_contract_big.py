"""Long messages take the contract's column paths (C loops, no Python step per node): they
must answer exactly what the node-by-node paths answer. Behaviour only, no timing."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract import (
    ComposerInputMessage,
    ComposerInputPayload,
    Nodes,
    SlashContract,
    composer_input_problems,
    pieces,
    strict_payload,
)
from contract import validate as validate_module
from contract.classify import _rest
from contract.models import built_message
from contract.utf16 import has_astral, utf16_len
from tests.test_contract_parity import CASES, HEADER, header_contract
from tests.test_contract_properties import CONTRACT, TEXT, js_slice

# One line of a pasted report: a reference, an emoji, a mention, a path, a known command.
LINE = "see @file:src/a.py, 😀 @ann /usr/bin/env /help. @branch:main\n"


@pytest.fixture(params=["few", "many"])
def assembly(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every payload built by the Python loop (``few``) or by the column slices (``many``)."""
    monkeypatch.setattr(pieces, "_FEW", 10**9 if request.param == "few" else 0)
    yield request.param


def slow_problems(payload: Any, strict_names: bool = True) -> list[str]:
    """The node-by-node validation alone, the reference for the column checks."""
    fast = validate_module._plainly_valid
    validate_module._plainly_valid = lambda *args: False  # type: ignore[assignment]
    try:
        return composer_input_problems(payload, strict_names=strict_names)
    finally:
        validate_module._plainly_valid = fast


@settings(max_examples=150)
@given(TEXT, st.integers(min_value=1, max_value=8))
def test_both_assemblies_give_the_same_nodes(text: str, times: int) -> None:
    text = (text + LINE) * times
    dumps = []
    for few in (10**9, 0):
        saved, pieces._FEW = pieces._FEW, few
        try:
            dumps.append(CONTRACT.classify(text).payload.model_dump(mode="json"))
        finally:
            pieces._FEW = saved
    assert dumps[0] == dumps[1]


def test_a_long_message_covers_its_source_in_utf16_units(assembly: str) -> None:
    text = "/deploy prod\n" + LINE * 300
    payload = CONTRACT.classify(text).payload
    nodes = payload.model_dump(mode="json")["nodes"]
    assert len(nodes) > 1000
    assert "".join(n["raw"] for n in nodes) == text
    assert all(js_slice(text, n["start"], n["end"]) == n["raw"] for n in nodes)
    assert nodes[-1]["end"] == utf16_len(text)
    assert [n["kind"] for n in nodes[:4]] == ["slash_command", "text", "file", "text"]
    assert sum(n["kind"] == "slash_command" for n in nodes) == 301  # /deploy and each /help
    assert composer_input_problems(payload.model_dump(mode="json")) == []


def test_model_dump_is_pydantic_s_dump() -> None:
    payload = CONTRACT.classify("/deploy @file:a.py 😀 /help").payload
    for mode in ("python", "json"):
        for exclude_none in (False, True):
            expected = super(ComposerInputPayload, payload).model_dump(
                mode=mode, exclude_none=exclude_none
            )
            assert payload.model_dump(mode=mode, exclude_none=exclude_none) == expected
    empty = ComposerInputPayload(source="hi")
    assert empty.model_dump() == {"source": "hi", "nodes": None}
    assert empty.model_dump(exclude_none=True) == {"source": "hi"}
    assert payload.model_dump(include={"source"}) == {"source": payload.source}


def mutations(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Payloads a little off what the contract makes: each breaks a rule, or only leaves
    the column path (a gap, an extra key), or neither."""
    nodes = data["nodes"]
    for index in sorted({0, min(1, len(nodes) - 1), len(nodes) // 2, len(nodes) - 1}):
        for field, value in [
            ("start", True),
            ("start", float(nodes[index]["start"])),
            ("end", float(nodes[index]["end"])),
            ("end", nodes[index]["end"] + 1),
            ("start", nodes[index]["start"] + 1),
            ("raw", nodes[index]["raw"] + "x"),
            ("raw", None),
            ("kind", "image"),
            ("kind", "text"),
            ("name", ""),
            ("name", 3),
            ("name", "Not Strict"),
            ("path", "a.py"),
            ("extra", 1),
        ]:
            changed = copy.deepcopy(data)
            changed["nodes"][index][field] = value
            yield changed
        for key in ("raw", "start", "kind", "name", "path"):
            changed = copy.deepcopy(data)
            changed["nodes"][index].pop(key, None)
            yield changed
        changed = copy.deepcopy(data)
        del changed["nodes"][index]
        yield changed
        changed = copy.deepcopy(data)
        changed["nodes"][index] = [1]
        yield changed
    changed = copy.deepcopy(data)
    changed["source"] += "!"
    yield changed
    yield {"source": data["source"], "nodes": []}


@pytest.mark.parametrize(
    "text",
    [
        "/deploy @file:a.py to dev",
        "plain words, no nodes at all",
        "😀 @symbol:x and /help: 𝔘 @branch:b.",
        "/deploy " + LINE * 40,
    ],
)
def test_column_checks_answer_what_the_node_loop_answers(text: str) -> None:
    data = CONTRACT.classify(text).payload.model_dump(mode="json")
    for changed in [data, *mutations(data)]:
        for strict in (True, False):
            assert composer_input_problems(changed, strict_names=strict) == slow_problems(
                changed, strict
            )


@settings(max_examples=200)
@given(TEXT)
def test_strict_lowering_of_long_messages_keeps_passing(text: str) -> None:
    lowered = strict_payload(CONTRACT.classify((text + LINE) * 3).payload)
    data = lowered.model_dump(mode="json", exclude_none=True)
    assert composer_input_problems(data) == slow_problems(data) == []


@given(st.text())
def test_has_astral_is_any_character_outside_the_bmp(text: str) -> None:
    assert has_astral(text) == any(c > "\uffff" for c in text)
    assert has_astral(text * 50) == has_astral(text)


@given(st.text(alphabet=st.sampled_from(" \t\n\u00a0x😀")), st.integers(0, 600))
def test_rest_is_the_stripped_remainder(text: str, start: int) -> None:
    for long in (text, text * 40, "x" + " " * 300 + text):
        cut = min(start, len(long))
        assert _rest(long, cut) == long[cut:].strip()


def assert_fast_payload_is_the_validated_one(contract: SlashContract, text: str) -> None:
    """A payload is built without pydantic's validation and its few nodes are dumped straight
    from the contract's pieces: the same model and the same JSON bytes as the slow paths."""
    payload = contract.classify(text).payload
    dumped = json.dumps(payload.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
    pydantic_dump = super(ComposerInputPayload, payload).model_dump(mode="json")
    nodes = payload.nodes
    assert isinstance(nodes, Nodes)
    validated = ComposerInputPayload(source=text, nodes=nodes.models())
    assert type(payload) is ComposerInputPayload
    assert payload == validated and hash(payload) == hash(validated)
    assert payload.model_fields_set == validated.model_fields_set == {"source", "nodes"}
    assert pickle.loads(pickle.dumps(payload)) == validated
    assert payload.model_copy(update={"source": "x"}).source == "x" and payload.source == text
    for reference in (
        validated.model_dump(mode="json", exclude_none=True),
        {"source": text, "nodes": Nodes(tuple(nodes.rows)).dump()},
        {"source": text, "nodes": list(pydantic_dump["nodes"])},
    ):
        assert json.dumps(reference, ensure_ascii=False) == dumped
    message, validated_message = built_message(payload), ComposerInputMessage(payload=payload)
    assert type(message) is ComposerInputMessage
    assert message == validated_message and hash(message) == hash(validated_message)
    assert message.model_fields_set == validated_message.model_fields_set == {"payload"}
    assert message.model_dump_json() == validated_message.model_dump_json()
    assert pickle.loads(pickle.dumps(message)) == validated_message
    assert len(nodes) == len(validated.nodes or ())


@pytest.mark.parametrize("case", CASES, ids=[c["text"] for c in CASES])
def test_parity_payloads_are_the_validated_ones(case: dict[str, Any]) -> None:
    assert_fast_payload_is_the_validated_one(header_contract(HEADER), case["text"])


@settings(max_examples=300)
@given(TEXT)
def test_payloads_are_the_validated_ones(text: str) -> None:
    assert_fast_payload_is_the_validated_one(CONTRACT, text)
    assert_fast_payload_is_the_validated_one(CONTRACT, "/deploy " + text)
