"""Every link of the README and docs/ to a file of the repository leads somewhere: the file
exists, and the heading a ``#fragment`` names is in it (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchors(page: Path) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation out, spaces as hyphens."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def broken_links() -> list[str]:
    found = []
    for page in PAGES:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            if not linked.exists():
                found.append(f"{where}: no such file")
            elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
                found.append(f"{where}: no heading #{fragment} in {linked.name}")
    return found


def test_every_link_of_the_docs_leads_somewhere() -> None:
    assert not broken_links(), "\n".join(broken_links())
