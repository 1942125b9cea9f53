"""The web chat's first screen, in a real browser at desktop and phone width: a greeting that
names the agent, commands to try from the live inventory, a readable conversation name. Its
screenshots are the README's pictures (``shoot``; docs/testing.md says how to renew them).
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from gateway.runtimes.embedded.demo import demo_bot
from tests.conftest import ServerFactory

from .conftest import LOOP, OpenPage, Shoot

pytestmark = LOOP

SIZES = {"desktop": (1000, 720), "phone": (375, 720)}
SUFFIX = {"desktop": "", "phone": "-phone"}
# The demo's /help first, then its commands that take no argument, then those that do.
SUGGESTED = ["/help", "/quickstart", "/echo", "/slow"]

# What sticks out of the screen or is cut off in its box (an element narrower than its text),
# but for the labels only screen readers get.
OVERFLOWING = """(elements) => elements
  .filter((e) => !e.closest(".visually-hidden"))
  .filter((e) => {
    const box = e.getBoundingClientRect();
    const cut = e.clientWidth > 0 && e.scrollWidth > e.clientWidth;
    return cut || box.left < 0 || box.right > document.documentElement.clientWidth;
  })
  .map((e) => e.outerHTML.slice(0, 80))"""
# Whether an input's placeholder fits in it, measured in the input's own font.
PLACEHOLDER_FITS = """(input) => {
  const style = getComputedStyle(input);
  const context = document.createElement("canvas").getContext("2d");
  context.font = style.font;
  const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return context.measureText(input.placeholder).width <= room;
}"""


async def assert_nothing_cut_off(page: Page) -> None:
    root = "document.documentElement"
    assert await page.evaluate(f"{root}.scrollWidth <= {root}.clientWidth")
    shown = page.locator("header, header *, #welcome, #welcome *, footer, footer *")
    assert await shown.evaluate_all(OVERFLOWING) == []


async def conversation_id(page: Page) -> str:
    return str(await page.evaluate("localStorage.getItem('slashgate.conversation')"))


@pytest.mark.parametrize("form", ["desktop", "phone"])
async def test_the_first_screen_greets_by_the_agents_name_and_offers_commands(
    form: str, gateway_server: ServerFactory, open_page: OpenPage, shoot: Shoot
) -> None:
    width, height = SIZES[form]
    async with gateway_server(demo_bot()) as server:
        page = (await open_page(server.url, width=width, height=height)).page
        welcome = page.get_by_role("region", name="Hello! You are talking to demo.")
        await expect(welcome).to_be_visible()
        await expect(page.locator("#agent-name")).to_have_text("demo")
        await expect(welcome).to_contain_text("The demo entity")
        suggestions = page.get_by_role("list", name="Commands to try").get_by_role("button")
        await expect(suggestions.locator(".name")).to_have_text(SUGGESTED)
        await expect(suggestions.first).to_contain_text("List commands")
        await expect(page.get_by_role("combobox", name="Message")).to_have_attribute(
            "placeholder", "Message demo, or / for commands"
        )

        # The conversation is "New conversation", whole, never its id.
        name = page.get_by_role("textbox", name="Conversation name")
        await expect(name).to_have_value("")
        await expect(name).to_have_attribute("placeholder", "New conversation")
        assert await name.evaluate(PLACEHOLDER_FITS)
        assert await conversation_id(page) not in await page.locator("body").inner_text()
        await assert_nothing_cut_off(page)
        await shoot(page, f"webchat-first-screen{SUFFIX[form]}.png")

        # Renamed in place; Enter goes back to the composer.
        await name.click()
        await page.keyboard.type("Trying slashgate")
        await page.keyboard.press("Enter")
        composer = page.locator("#input")
        await expect(composer).to_be_focused()
        await expect(name).to_have_value("Trying slashgate")

        # A command that needs an argument goes to the composer, with its hint.
        await suggestions.filter(has_text="/echo").click()
        await expect(composer).to_have_value("/echo ")
        await expect(composer).to_be_focused()
        await expect(page.locator("#hint")).to_have_text(
            "/echo <text> — Reply with exactly the given text"
        )
        await page.keyboard.type("Hello from the web chat!")
        await page.keyboard.press("Enter")
        await expect(page.locator(".agent").last.locator(".body")).to_have_text(
            "Hello from the web chat!"
        )
        await expect(welcome).to_be_hidden()

        await page.keyboard.type("/quick")
        await expect(page.locator("#menu [role=option] .name")).to_have_text(["/quickstart"])
        await page.keyboard.press("Tab")
        await page.keyboard.press("Enter")
        guide = page.locator(".agent").last
        await expect(guide).to_have_attribute("data-state", "done")
        await expect(guide.locator(".body li")).to_have_count(4)
        # An item's indented second line goes on with the item.
        await expect(guide.locator(".body li").nth(1)).to_contain_text("or another command.")
        await expect(name).to_have_value("Trying slashgate")
        root = "document.documentElement"
        assert await page.evaluate(f"{root}.scrollWidth <= {root}.clientWidth")
        await shoot(page, f"webchat-conversation{SUFFIX[form]}.png")

        await page.keyboard.type("/st")
        menu = page.get_by_role("listbox", name="Commands")
        await expect(menu.get_by_role("option").first).to_contain_text("/status")
        box = await menu.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        if form == "desktop":  # docs/webchat.md's picture
            await shoot(page, "webchat-menu.png")


async def test_a_command_without_arguments_is_sent_by_a_click_and_names_the_conversation(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    async with gateway_server(demo_bot()) as server:
        page = (await open_page(server.url)).page
        await page.get_by_role("button", name="/help").click()
        await expect(page.locator(".user")).to_have_text(["/help"])
        agent = page.locator(".agent").last
        await expect(agent.locator(".body")).to_contain_text("Gateway commands")
        await expect(agent.locator(".body")).to_contain_text("/quickstart")
        name = page.get_by_role("textbox", name="Conversation name")
        await expect(name).to_have_value("/help")  # after its first message
        await expect(page.locator("#welcome")).to_be_hidden()

        await page.reload()
        await expect(name).to_have_value("/help")
        await expect(page.locator("#welcome")).to_be_hidden()

        # Keyboard only: a new conversation shows the first screen again, unnamed.
        first = await conversation_id(page)
        await page.get_by_role("button", name="New conversation").focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("#welcome")).to_be_visible()
        await expect(name).to_have_value("")
        assert await conversation_id(page) != first
        suggestions = page.locator("#suggestions .suggestion")
        await expect(suggestions.locator(".name")).to_have_text(SUGGESTED)
        await suggestions.first.focus()
        await page.keyboard.press("Enter")
        await expect(page.locator(".user")).to_have_text(["/help"])

        # A long first message names it by its first words.
        await page.get_by_role("button", name="New conversation").click()
        await page.keyboard.type("Please summarise the release notes of the last three versions")
        await page.keyboard.press("Enter")
        await expect(name).to_have_value("Please summarise the release notes of…")


async def test_commands_the_user_may_not_run_are_not_suggested(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    settings = {"webhook_owners": ["someone-else"], "webhook_owner_commands": ["quick*"]}
    async with gateway_server(demo_bot(), **settings) as server:
        page = (await open_page(server.url)).page
        suggestions = page.locator("#suggestions .suggestion .name")
        await expect(suggestions).to_have_text(["/help", "/echo", "/slow", "/remember"])
