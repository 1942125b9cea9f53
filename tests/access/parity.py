"""The access policy's parity cases (tests/parity/access.jsonl, this repository's own): what
every channel's runner plays and checks. One gateway per channel plays them all, each case
with senders of its own (a bucket of its own); per text, the gateway's reply (its category
and text, or none at all) must be the case's, and the runtime must have received what the
case says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from contract import Command
from gateway.events import Mode
from gateway.inbound import InboundMessage, Outcome
from tests.access.recording import Recording
from tests.conftest import ROOT

T = TypeVar("T")
Seen = list[tuple[InboundMessage, Outcome]]
CORPUS = ROOT / "tests" / "parity" / "access.jsonl"
_lines = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line]
HEADER: dict[str, Any] = _lines[0]["header"]
CASES: list[dict[str, Any]] = _lines[1:]


def runtime() -> Recording:
    """The header's agent: its commands and modes, answering ``ran: <what it got>``."""
    return Recording(
        tuple(Command(**c, source="runtime") for c in HEADER["inventory"]),
        tuple(Mode(m, m.capitalize()) for m in HEADER["modes"]),
    )


def senders(owner: str, member: Callable[[int], str]) -> list[str]:
    """Each case's sender: ``owner``, or a member of its own (``member(index)``)."""
    return [owner if c["sender"] == "owner" else member(i) for i, c in enumerate(CASES)]


def settings(channel: str, owner: str, group: str, members: list[str]) -> dict[str, Any]:
    """The gateway settings of the cases on a chat channel: ``group`` listed, ``members``
    allowed (also in direct messages), ``owner`` its owner.
    """
    return {
        f"{channel}_dm_policy": "allowlist",
        f"{channel}_group_policy": "allowlist",
        f"{channel}_allow_groups": [group],
        f"{channel}_allow_users": members,
        f"{channel}_owners": [owner],
        f"{channel}_owner_commands": HEADER["owner_commands"],
        "sender_rate": float(HEADER["sender_rate"]),
        "sender_burst": HEADER["sender_burst"],
    }


def limited(case: dict[str, Any]) -> bool:
    """Whether the case is about the per-sender limits."""
    return any(r is not None and r["category"] == "rate_limited" for r in case["replies"])


def said(outcome: Outcome) -> dict[str, Any] | None:
    reply = outcome.reply
    return None if reply is None else {"category": reply.category, "text": reply.text}


def matches(expected: str, text: str) -> bool:
    """``text`` is ``expected`` with a whole number of seconds for each ``{retry}``."""
    pattern = r"[1-9][0-9]*".join(re.escape(part) for part in expected.split("{retry}"))
    return re.fullmatch(pattern, text) is not None


def check(case: dict[str, Any], seen: Seen, ran: list[str]) -> list[dict[str, Any] | None]:
    """The case's replies against the gateway's (``seen``: its inputs in order) and what
    reached the runtime (``ran``); the replies as given, for the channel's own checks.
    """
    assert [m.text for m, _ in seen] == case["texts"], case["name"]
    got = [said(outcome) for _, outcome in seen]
    assert len(got) == len(case["replies"]), case["name"]
    for expected, reply in zip(case["replies"], got, strict=True):
        if expected is None:
            assert reply is None, (case["name"], reply)
            continue
        assert reply is not None, (case["name"], expected)
        assert reply["category"] == expected["category"], (case["name"], reply)
        assert matches(expected["text"], reply["text"]), (case["name"], reply)
    assert ran == case["ran"], case["name"]
    return got


async def play(
    seen: Seen,
    agent: Recording,
    users: list[str],
    send: Callable[[dict[str, Any], str, str], Awaitable[T]],
) -> list[tuple[dict[str, Any], list[tuple[str, Outcome, dict[str, Any] | None, T]]]]:
    """Every case, each text sent by the case's user with ``send(case, user, text)``, which
    answers what the channel showed for it, and checked against the case. Per case, per
    text: (the text, its outcome, its reply, what was shown), for the channel's own checks.
    """
    played = []
    for case, user in zip(CASES, users, strict=True):
        inputs, ran = len(seen), len(agent.texts)
        shown = [await send(case, user, text) for text in case["texts"]]
        replies = check(case, seen[inputs:], agent.texts[ran:])
        outcomes = [outcome for _, outcome in seen[inputs:]]
        played.append((case, list(zip(case["texts"], outcomes, replies, shown, strict=True))))
    return played
