"""Every case of tests/parity/cases.jsonl through the Telegram channel, next to the webhook.

One gateway serves both channels, on an embedded runtime whose inventory is the header's and
whose handler answers deterministically. A case goes in as a Telegram update (private chat,
the bot named as in the header through the fake's getMe) and as a webhook request; both must
give the classification the case expects, the same forwarded composer_input and the same
user-facing text (the webhook's Markdown, as Telegram shows it once rendered).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from channels.telegram.render import render
from contract import Command
from gateway.inbound import InboundMessage, Outcome, ReplySink
from gateway.state import Entry
from tests.conftest import case_view, load_parity, parity_runtime

from .fake_bot_api import FakeBotAPI
from .helpers import PRIVATE, Served, Start, message_update

HEADER, CASES = load_parity()
REJECTED = ("invalid", "unsupported", "interactive_only")


@pytest.fixture
async def fake() -> AsyncIterator[FakeBotAPI]:
    async with FakeBotAPI(username=HEADER["bot_username"]) as api:
        yield api


def observed(outcome: Outcome) -> dict[str, Any]:
    """The outcome in the case's vocabulary."""
    result = outcome.classification
    rejected = outcome.reply is not None and result.kind in REJECTED
    return case_view(result, outcome.reply.text if rejected and outcome.reply else None)


def forwarded(outcome: Outcome) -> Any:
    return outcome.forwarded and outcome.forwarded.model_dump(mode="json", exclude_none=True)


async def run_both(
    served: Served, telegram_text: str, webhook_text: str
) -> tuple[Outcome, Outcome, dict[str, Any]]:
    """(Telegram outcome, webhook outcome, webhook response body) for one input each."""
    outcomes: dict[str, Outcome] = {}
    gateway = served.server.gateway
    handle = gateway.handle

    async def spy(
        message: InboundMessage, sink: ReplySink | None = None, entry: Entry | None = None
    ) -> Outcome:
        outcome = await handle(message, sink, entry)
        outcomes[message.channel] = outcome
        return outcome

    gateway.handle = spy  # type: ignore[method-assign]
    body = {"conversation": "parity", "user": "u1", "text": webhook_text}
    async with served.http.post(f"{served.server.url}/v1/messages", json=body) as resp:
        assert resp.status == 200
        web = await resp.json()
    await served.deliver(message_update(PRIVATE, telegram_text))
    return outcomes["telegram"], outcomes["webhook"], web


@pytest.mark.parametrize("case", CASES, ids=[c["text"] for c in CASES])
async def test_parity_case(telegram: Start, fake: FakeBotAPI, case: dict[str, Any]) -> None:
    text = case["text"]
    async with telegram(parity_runtime(), interactive_only=HEADER["interactive_only"]) as served:
        assert served.server.gateway.host_commands() == tuple(
            Command(**c, source="gateway") for c in HEADER["host_commands"]
        )
        tg, wh, web = await run_both(served, text, text)

        got = observed(tg)
        assert {key: got[key] for key in case["expect"]} == case["expect"]
        assert web["classification"] == {
            "kind": got["kind"],
            "command": got["command"],
            "args": got["args"],
        }
        assert (tg.classification.typed, tg.classification.source) == (
            wh.classification.typed,
            wh.classification.source,
        )

        if got["for_other_bot"]:
            # The webhook knows no bot username, so only Telegram can tell: it stays silent.
            assert tg.forwarded is None and tg.reply is None
            assert fake.calls_to("sendMessage") == [] and fake.calls_to("sendChatAction") == []
            return

        assert forwarded(tg) == web["forwarded"]
        assert tg.reply is not None
        if tg.classification.command == "help":
            # Spelled for Telegram: menu names as plain, tappable links (test_help.py).
            assert "`/" not in tg.reply.text and "`/" in web["reply"]["text"]
        else:
            assert tg.reply.text == web["reply"]["text"]
        assert tg.reply.category == web["reply"]["category"]
        chunks = render(tg.reply.text)
        assert fake.texts(PRIVATE) == [c.plain for c in chunks]
        assert [m.raw for m in fake.messages(PRIVATE)] == [c.html for c in chunks]


async def test_a_menu_name_typed_back_matches_the_webhook_with_the_original(
    telegram: Start, fake: FakeBotAPI
) -> None:
    original = "/pr-review 123 in /worktree see @branch:main"
    typed = "/pr_review 123 in /worktree see @branch:main"
    async with telegram(parity_runtime(), interactive_only=HEADER["interactive_only"]) as served:
        tg, wh, web = await run_both(served, typed, original)
        assert observed(tg) == observed(wh)
        assert forwarded(tg) == web["forwarded"]
        assert fake.texts(PRIVATE) == [f"runtime received: {original}"]
