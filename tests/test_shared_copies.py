"""The repository carries its own copies of the shared contract and parity cases, so that a
clone alone runs every test; where the shared originals sit beside it, the copies must match.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import PARITY, ROOT

SHARED = ROOT.parent / "shared"
CONTRACT = ROOT / "docs" / "contract.md"
# The copy's paths are this repository's; its first lines say where it comes from.
PATHS = {"shared/parity/cases.jsonl": "tests/parity/cases.jsonl"}
HEADER_LINES = 2

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="no ../shared beside the repository: nothing to compare with"
)


@needs_shared
def test_parity_cases_are_the_shared_ones() -> None:
    shared = (SHARED / "parity" / "cases.jsonl").read_text(encoding="utf-8")
    assert PARITY.read_text(encoding="utf-8") == shared, (
        "tests/parity/cases.jsonl differs from shared/parity/cases.jsonl: copy it again"
    )


@needs_shared
def test_contract_text_is_the_shared_one() -> None:
    shared = (SHARED / "CONTRACT.md").read_text(encoding="utf-8")
    for theirs, ours in PATHS.items():
        shared = shared.replace(theirs, ours)
    copy = CONTRACT.read_text(encoding="utf-8").split("\n", HEADER_LINES)[HEADER_LINES]
    assert copy == shared, "docs/contract.md differs from shared/CONTRACT.md: copy it again"


def test_the_docs_cite_only_files_in_the_repository() -> None:
    for doc in (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))):
        text = doc.read_text(encoding="utf-8")
        cited = re.findall(r"shared/[\w.]+", text)
        assert not cited, f"{doc.name} cites files outside the repository: {cited}"
