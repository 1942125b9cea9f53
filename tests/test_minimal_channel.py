"""A channel of your own, as docs/extending.md writes it: a folder's worth of code and one
line in the app's registry. Every case of tests/parity/cases.jsonl goes through it and
through the webhook in the same run: the same classification, the same forwarded
composer_input, the same reply.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.api import Channel, Entry, InboundMessage, Outcome, Reply, ReplySink
from gateway.settings import CoreSettings
from slashgate import registry
from slashgate.registry import Plug
from tests.conftest import ROOT, ServerFactory, case_view, load_parity, parity_runtime

HEADER, CASES = load_parity()
REJECTED = ("invalid", "unsupported", "interactive_only")
# Neither channel knows a bot username: only Telegram can tell "/x@other_bot" is for another.
BOT_ONLY = {"for_other_bot"}


# The channel, as the doc shows it.


class TextSink(ReplySink):
    """Renders one input's reply: here, keeps its text for the HTTP answer."""

    def __init__(self) -> None:
        self.text: str | None = None

    async def final(self, reply: Reply) -> None:
        self.text = reply.text


class PlainChannel(Channel[CoreSettings]):
    name = "plain"

    def mount(self, app: web.Application) -> None:
        app.router.add_post("/plain", self.receive)

    async def receive(self, request: web.Request) -> web.Response:
        body = await request.json()
        message = InboundMessage(self.name, body["chat"], body["user"], body["text"])
        sink = TextSink()
        await self.gateway.handle(message, sink)
        return web.json_response({"text": sink.text})


# Its line in the registry, here added for this test's gateway only.
PLUG = Plug(CoreSettings, lambda settings: True, f"{__name__}:PlainChannel", access="token")


def test_the_doc_shows_this_channel_and_its_registry_line() -> None:
    doc = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = doc.partition("## A channel of your own")[2]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "docs/extending.md has no channel of its own"
    for part in (TextSink, PlainChannel):
        assert inspect.getsource(part) in blocks[0]
    assert (
        'Plug(CoreSettings, lambda settings: True, "channels.plain.channel:PlainChannel", '
        'access="token")' in section
    )


def observed(outcome: Outcome) -> dict[str, Any]:
    """The outcome in the parity cases' vocabulary."""
    result, reply = outcome.classification, outcome.reply
    rejected = reply is not None and result.kind in REJECTED
    return case_view(result, reply.text if rejected and reply else None)


@pytest.fixture
def with_plain_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "CHANNELS", (*registry.CHANNELS, PLUG))


@pytest.mark.usefixtures("with_plain_channel")
async def test_every_parity_case_gives_the_webhook_outcome(gateway_server: ServerFactory) -> None:
    async with (
        gateway_server(parity_runtime(), interactive_only=HEADER["interactive_only"]) as server,
        aiohttp.ClientSession() as http,
    ):
        gateway = server.gateway
        handle = gateway.handle
        outcomes: dict[str, Outcome] = {}

        async def spy(
            message: InboundMessage, sink: ReplySink | None = None, entry: Entry | None = None
        ) -> Outcome:
            outcome = outcomes[message.channel] = await handle(message, sink, entry)
            return outcome

        gateway.handle = spy  # type: ignore[method-assign]
        for case in CASES:
            text = case["text"]
            body = {"conversation": "parity", "user": "u1", "text": text}
            async with http.post(f"{server.url}/v1/messages", json=body) as resp:
                assert resp.status == 200
                webhook = await resp.json()
            body = {"chat": "parity", "user": "u1", "text": text}
            async with http.post(f"{server.url}/plain", json=body) as resp:
                assert resp.status == 200
                plain = await resp.json()

            mine, theirs = outcomes["plain"], outcomes["webhook"]
            expected = {k: v for k, v in case["expect"].items() if k not in BOT_ONLY}
            got = observed(mine)
            assert {k: got[k] for k in expected} == expected, text
            assert got == observed(theirs), text
            forwarded = mine.forwarded and mine.forwarded.model_dump(mode="json", exclude_none=True)
            assert forwarded == webhook["forwarded"], text
            assert mine.reply is not None and theirs.reply is not None
            assert (mine.reply.text, mine.reply.category) == (
                webhook["reply"]["text"],
                webhook["reply"]["category"],
            ), text
            assert plain == {"text": webhook["reply"]["text"]}, text
