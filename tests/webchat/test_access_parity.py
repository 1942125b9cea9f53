"""The access policy's parity cases (tests/parity/access.jsonl) typed into the web chat. The
page is the webhook's: with ``webhook_owners`` set, its visitor (the id the page made up) is
no owner, so the cases of a member in a shared conversation apply; the per-sender limits
and direct messages are the chat channels' alone. Its completion menu offers the visitor
only what they may run.
"""

from __future__ import annotations

from playwright.async_api import expect

from tests.access.parity import CASES, HEADER, limited, matches, runtime
from tests.conftest import ServerFactory

from .conftest import LOOP, OpenPage

pytestmark = LOOP

PLAYED = [c for c in CASES if c["where"] == "group" and c["sender"] == "member" and not limited(c)]


async def test_the_access_cases_in_the_web_chat(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    assert PLAYED, "no case of the corpus applies to the web chat"
    agent = runtime()
    settings = {"webhook_owners": ["owner"], "webhook_owner_commands": HEADER["owner_commands"]}
    async with gateway_server(agent, **settings) as server:
        page = (await open_page(server.url)).page
        composer = page.locator("#input")
        await composer.fill("/")
        names = page.locator("#menu [role=option] .name")
        await expect(names.first).to_be_visible()
        offered = await names.all_text_contents()
        assert "/echo" in offered and "/help" in offered
        assert not {"/mode", "/new", "/skill:deploy"} & set(offered)
        await page.keyboard.press("Escape")

        turn = 0
        for case in PLAYED:
            for text, reply in zip(case["texts"], case["replies"], strict=True):
                await composer.fill(text)
                await page.keyboard.press("Escape")  # no menu: Enter sends
                await page.locator("#send").click()
                agent_turn = page.locator(".agent").nth(turn)
                turn += 1
                await expect(agent_turn).to_have_attribute("data-state", "done")
                shown = await agent_turn.locator(".body").text_content() or ""
                assert matches(reply["text"], shown), (case["name"], shown)
                category = await agent_turn.get_attribute("data-category")
                assert category == reply["category"], case["name"]
    assert agent.texts == [t for c in PLAYED for t in c["ran"]]
