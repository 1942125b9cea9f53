"""Every case of the parity corpus typed into the web chat, next to the webhook.

One gateway, an embedded runtime with the header's inventory that answers with what it
received. Each case is typed into the page's composer and sent with the Send button; the
page must send the text exactly as typed, show the notice the webhook's reply confirms,
and get the same classification, forwarded composer_input and reply as a direct webhook
request in the same run.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from playwright.async_api import expect

from tests.conftest import ServerFactory, load_parity, parity_runtime

from .conftest import LOOP, OpenPage

pytestmark = LOOP

HEADER, CASES = load_parity()
REJECTED = ("invalid", "unsupported", "interactive_only")
# The web chat, like the webhook, has no bot username: "/x@other_bot" is simply "/x" there
# (docs/internals/decisions.md), so only Telegram can tell the input is for another bot.
BOT_ONLY = {"for_other_bot"}


def final_event(stream: str) -> dict[str, Any]:
    """The data of the ``reply`` event of a whole text/event-stream body."""
    for block in stream.split("\n\n"):
        lines = block.split("\n")
        if lines[0] == "event: reply":
            return json.loads(lines[1].removeprefix("data: "))  # type: ignore[no-any-return]
    raise AssertionError(f"no reply event in {stream!r}")


async def test_the_parity_cases_give_the_webhook_outcomes(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    async with (
        gateway_server(parity_runtime(), interactive_only=HEADER["interactive_only"]) as server,
        aiohttp.ClientSession() as http,
    ):
        page = (await open_page(server.url)).page
        composer, notice = page.locator("#input"), page.locator("#notice")
        for index, case in enumerate(CASES):
            text = case["text"]
            body = {"conversation": "webhook-side", "user": "u1", "text": text}
            async with http.post(f"{server.url}/v1/messages", json=body) as resp:
                assert resp.status == 200
                webhook = await resp.json()

            async with page.expect_response(lambda r: r.url.endswith("/v1/classify")) as seen:
                await composer.fill(text)
            preview = await (await seen.value).json()
            assert preview["payload"]["source"] == text
            expected = {k: v for k, v in case["expect"].items() if k not in BOT_ONLY}
            got = {
                **preview["classification"],
                "nodes": preview["payload"]["nodes"],
                "message": preview["rejection"] and preview["rejection"]["text"],
            }
            assert {k: got[k] for k in expected} == expected, text
            assert preview["forwarded"] == webhook["forwarded"], text
            rejected = webhook["reply"]["category"] in REJECTED
            if rejected:
                await expect(notice).to_have_text(webhook["reply"]["text"])
            else:
                await expect(notice).to_be_hidden()

            async with page.expect_response(lambda r: r.url.endswith("/v1/messages")) as sent:
                await page.locator("#send").click()
            response = await sent.value
            assert response.request.post_data_json["text"] == text
            through_page = final_event(await response.text())
            assert through_page["conversation"] != webhook["conversation"]
            for key in ("classification", "forwarded", "reply"):
                assert through_page[key] == webhook[key], (text, key)

            agent = page.locator(".agent").nth(index)
            await expect(agent).to_have_attribute("data-state", "done")
            if rejected:
                await expect(agent.locator(".body")).to_have_text(webhook["reply"]["text"])
                await expect(agent).to_have_attribute("data-category", webhook["reply"]["category"])
