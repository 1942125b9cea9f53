"""Every case of tests/parity/cases.jsonl against the contract itself."""

from __future__ import annotations

from typing import Any

import pytest

from contract import Command, SlashContract
from tests.conftest import case_view, load_parity

HEADER, CASES = load_parity()


def header_contract(header: dict[str, Any]) -> SlashContract:
    return SlashContract(
        commands=[Command(**c) for c in header["inventory"]],
        interactive_only=header["interactive_only"],
        host_commands=[Command(**c, source="gateway") for c in header["host_commands"]],
        bot_username=header["bot_username"],
    )


def observed(contract: SlashContract, text: str) -> dict[str, Any]:
    """Everything a case may expect, in the case's own vocabulary."""
    result = contract.classify(text)
    return case_view(result, contract.rejection(result))


@pytest.mark.parametrize("case", CASES, ids=[c["text"] for c in CASES])
def test_parity_case(case: dict[str, Any]) -> None:
    got = observed(header_contract(HEADER), case["text"])
    assert {key: got[key] for key in case["expect"]} == case["expect"]


def test_the_corpus_covers_every_classification() -> None:
    kinds = {case["expect"]["kind"] for case in CASES}
    assert kinds == {"not_slash", "supported", "interactive_only", "unsupported", "invalid"}
