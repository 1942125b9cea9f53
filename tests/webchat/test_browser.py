"""The web chat in a real browser, against a real gateway on 127.0.0.1.

The runtime is the embedded one with a test entity: the demo commands plus ``/deploy``,
whose reply streams its first line and then waits for the test, so that a test can watch
the reply arrive in pieces.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.async_api import Page, Route, expect
from pydantic import SecretStr

from contract import Command
from gateway.events import (
    MessageDelta,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
    StatusChanged,
    ToolEnd,
    ToolStart,
)
from gateway.runtimes.embedded.demo import demo_bot
from slashgate import Bot, Context
from tests.conftest import ServerFactory
from tests.telegram.helpers import Scripted

from .conftest import LOOP, WAIT, OpenPage

pytestmark = LOOP

DEPLOY = Command(name="deploy", description="Deploy a build", hint="environment")
UNSUPPORTED = "Unsupported slash command /nope. Send /help to list available commands."


@dataclass
class Deployer:
    """The demo bot plus ``/deploy <env>``: streams "Deploying **env**…", waits for
    ``release``, then ends.
    """

    release: asyncio.Event = field(default_factory=asyncio.Event)

    def runtime(self) -> Bot:
        bot = demo_bot()

        @bot.command(DEPLOY.name, description=DEPLOY.description, hint=DEPLOY.hint)
        async def deploy(ctx: Context) -> None:
            await ctx.reply(f"Deploying **{ctx.args}**…\n")
            await self.release.wait()
            await ctx.reply("Deployed.")

        return bot


def last_agent(page: Page) -> Any:
    return page.locator(".agent").last


async def reply_done(page: Page) -> Any:
    """The last agent answer, once final."""
    agent = last_agent(page)
    await expect(agent).not_to_have_class("agent pending")
    await expect(agent).to_have_attribute("data-state", "done")
    return agent


async def test_a_hint_in_the_gateways_notation_is_shown_as_it_is(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    """The page bracketed every hint again: ``<<name> <text>>``."""
    async with gateway_server(demo_bot()) as server:
        page = (await open_page(server.url)).page
        await page.keyboard.type("/remem")
        option = page.locator("#menu [role=option]").first
        await expect(option.locator(".arg")).to_have_text("<name> <text>")
        await page.keyboard.press("Tab")
        await expect(page.locator("#hint")).to_contain_text("/remember <name> <text>")


async def test_complete_accept_with_the_keyboard_and_watch_the_reply_stream(
    gateway_server: ServerFactory, open_page: OpenPage, screenshots: Path
) -> None:
    deployer = Deployer()
    async with gateway_server(deployer.runtime()) as server:
        page = (await open_page(server.url)).page
        composer = page.locator("#input")
        await expect(composer).to_be_focused()
        await page.keyboard.type("/de")
        menu = page.locator("#menu")
        await expect(menu).to_be_visible()
        options = menu.locator("[role=option]")
        await expect(options.first.locator(".name")).to_have_text("/deploy")
        await expect(options.first).to_have_attribute("aria-selected", "true")
        await expect(options.first).to_contain_text("Deploy a build")
        await page.screenshot(path=screenshots / "menu.png")

        await page.keyboard.press("Tab")
        await expect(menu).to_be_hidden()
        await expect(composer).to_have_value("/deploy ")
        await expect(page.locator("#hint")).to_contain_text("/deploy <environment>")
        await page.keyboard.type("prod")
        await page.keyboard.press("Enter")

        await expect(composer).to_have_value("")
        user = page.locator(".user").last
        await expect(user).to_have_text("/deploy prod")
        await expect(user.locator(".chip-slash_command")).to_have_text("/deploy")
        agent = last_agent(page)
        await expect(agent.locator(".body")).to_have_text("Deploying prod…")
        await expect(agent.locator(".body strong")).to_have_text("prod")
        await expect(agent).to_have_class("agent pending")
        await expect(page.locator("#activity")).to_have_text("working")
        await expect(page.locator("#stop")).to_be_enabled()
        await page.screenshot(path=screenshots / "streaming.png")

        deployer.release.set()
        agent = await reply_done(page)
        await expect(agent.locator(".body")).to_have_text("Deploying prod…Deployed.")
        await expect(page.locator("#stop")).to_be_disabled()
        await expect(page.locator("#activity")).to_have_text("")


async def test_the_notice_tells_before_sending_what_would_be_rejected(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url)).page
        notice = page.locator("#notice")
        await page.keyboard.type("/nope")
        await expect(notice).to_have_text(UNSUPPORTED)
        await expect(notice).to_have_attribute("data-category", "unsupported")
        await expect(page.locator(".turn")).to_have_count(0)  # nothing was sent

        await page.keyboard.press("Enter")
        agent = await reply_done(page)
        await expect(agent.locator(".body")).to_have_text(UNSUPPORTED)
        await expect(agent).to_have_attribute("data-category", "unsupported")
        await expect(notice).to_be_hidden()

        await page.keyboard.type("/settings")
        await expect(page.locator("#menu [role=option] .tag")).to_have_text("TUI only")
        await expect(notice).to_be_hidden()  # while the menu is open, Enter accepts from it
        await page.keyboard.press("Escape")  # close the menu; Enter now sends
        await expect(notice).to_have_attribute("data-category", "interactive_only")
        await expect(notice).to_contain_text("only runs in the interactive TUI")
        await expect(notice).to_be_visible()
        await page.keyboard.press("Enter")
        agent = await reply_done(page)
        await expect(agent).to_have_attribute("data-category", "interactive_only")

        await page.keyboard.type("/ deploy")
        await expect(notice).to_have_text("Invalid slash command. Enter a command name after /.")
        await page.keyboard.press("Control+A")
        await page.keyboard.type("/deploy now")
        await expect(notice).to_be_hidden()


async def test_a_remembered_command_joins_the_menu_without_a_reload(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url)).page
        await page.keyboard.type("/gr")
        await expect(page.locator("#menu")).to_be_hidden()  # nothing called gr... yet

        await page.keyboard.press("Control+A")
        await page.keyboard.type("/remember greet Hello *there*!")
        await page.keyboard.press("Escape")
        await page.keyboard.press("Enter")
        agent = await reply_done(page)
        await expect(agent.locator(".body")).to_have_text("Remembered /greet.")

        await page.keyboard.type("/gr")
        option = page.locator("#menu [role=option]").first
        await expect(option.locator(".name")).to_have_text("/greet")
        await expect(option.locator(".tag")).to_have_text("dynamic")
        await page.keyboard.press("Enter")  # accept
        await expect(page.locator("#input")).to_have_value("/greet ")
        await page.keyboard.press("Enter")  # send
        agent = await reply_done(page)
        await expect(agent.locator(".body em")).to_have_text("there")
        await expect(agent.locator(".body")).to_have_text("Hello there!")

        # A reload keeps the conversation: its transcript, and its commands on the server.
        stored = "localStorage.getItem('slashgate.conversation')"
        conversation = await page.evaluate(stored)
        await page.reload()
        assert await page.evaluate(stored) == conversation
        await expect(page.locator(".turn .body")).to_have_text(
            ["Remembered /greet.", "Hello there!"]
        )
        await expect(page.locator(".user").last.locator(".chip")).to_have_text("/greet")
        await page.locator("#input").focus()
        await page.keyboard.type("/gr")
        await expect(page.locator("#menu .name")).to_have_text(["/greet"])

        # A new conversation starts empty, with its own (fresh) commands.
        await page.get_by_role("button", name="New conversation").click()
        await expect(page.locator("#welcome")).to_be_visible()
        assert await page.evaluate(stored) != conversation
        await expect(page.locator(".turn")).to_have_count(0)
        await page.keyboard.type("/gr")
        async with page.expect_response(lambda r: "/v1/complete" in r.url) as answered:
            await page.keyboard.type("e")
        assert (await (await answered.value).json())["items"] == []
        await expect(page.locator("#menu")).to_be_hidden()


async def test_tool_status_and_permission_cards_answered_by_click(
    gateway_server: ServerFactory, open_page: OpenPage, screenshots: Path
) -> None:
    runtime = Scripted(Command(name="clean", description="Clean the build"))
    async with gateway_server(runtime) as server:
        page = (await open_page(server.url)).page
        await page.keyboard.type("/clean")
        await page.keyboard.press("Escape")
        await page.keyboard.press("Enter")
        turn = await runtime.next_turn()
        turn.emit(
            StatusChanged("generating"),
            ToolStart("t1", "rm -rf build/", "execute"),
            PermissionRequired(
                "req-1",
                "Run rm -rf build/?",
                (
                    PermissionOption("allow", "Allow once"),
                    PermissionOption("deny", "Reject", "reject_once"),
                ),
            ),
        )
        agent = last_agent(page)
        card = agent.locator(".card-permission")
        await expect(card).to_contain_text("Run rm -rf build/?")
        await expect(agent.locator(".card-tool")).to_contain_text("rm -rf build/ running")
        # The core says what the turn waits for once a permission request is out.
        await expect(agent.locator(".card-status")).to_have_text(
            "status: waiting_for_permission — Run rm -rf build/?"
        )
        await page.screenshot(path=screenshots / "permission.png")

        await card.get_by_role("button", name="Allow once").click()
        assert await asyncio.wait_for(turn.answer("req-1"), 10) == "allow"
        await expect(card.locator(".answer")).to_have_text("→ Allow once")
        await expect(card.get_by_role("button")).to_have_count(0)

        turn.emit(ToolEnd("t1", "completed", "removed 3 files"), MessageDelta("Cleaned."))
        turn.emit(MessageEnd())
        agent = await reply_done(page)
        await expect(agent.locator(".card-tool")).to_contain_text("rm -rf build/ completed")
        await expect(agent.locator(".body")).to_have_text("Cleaned.")


async def test_queued_input_shows_and_the_stop_button_cancels(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url)).page
        await page.keyboard.type("/deploy staging")
        await page.keyboard.press("Enter")
        first = page.locator(".agent").nth(0)
        await expect(first.locator(".body")).to_have_text("Deploying staging…")

        await page.keyboard.type("and then?")
        await page.keyboard.press("Enter")
        second = page.locator(".agent").nth(1)
        await expect(second.locator(".badge")).to_have_text("queued")
        await expect(page.locator("#activity")).to_have_text("working · 1 queued")

        # Keyboard only: Tab from the composer reaches Send, then Stop.
        await page.keyboard.press("Tab")
        await expect(page.locator("#send")).to_be_focused()
        await page.keyboard.press("Tab")
        await expect(page.locator("#stop")).to_be_focused()
        await page.keyboard.press("Enter")

        cancel = page.locator(".turn").nth(2)
        await expect(cancel.locator(".user")).to_have_text("/cancel")
        await expect(cancel.locator(".body")).to_have_text("Cancelled the running turn.")
        await expect(first.locator(".meta")).to_have_text("cancelled")
        await expect(second.locator(".body")).to_have_text('You said: "and then?"')
        await expect(page.locator("#stop")).to_be_disabled()


async def test_agent_markup_never_becomes_html(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url)).page
        hostile = (
            '/echo <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> '
            "[click](javascript:window.pwned=3) **bold** `<b>code</b>` https://example.org/x"
        )
        await page.locator("#input").fill(hostile)
        await page.keyboard.press("Escape")
        await page.keyboard.press("Enter")
        body = (await reply_done(page)).locator(".body")
        await expect(body.locator("strong")).to_have_text("bold")
        await expect(body.locator("code")).to_have_text("<b>code</b>")
        assert await page.locator(".turn img, .turn script, .turn b").count() == 0
        assert await body.locator("a").evaluate_all("(links) => links.map((a) => a.href)") == [
            "https://example.org/x"
        ]
        assert await page.evaluate("window.pwned") is None
        await expect(body).to_contain_text('<img src=x onerror="window.pwned=1">')


async def test_at_phone_width_with_a_token(
    gateway_server: ServerFactory, open_page: OpenPage, screenshots: Path
) -> None:
    async with gateway_server(Deployer().runtime(), webhook_token=SecretStr("s3cret")) as server:
        page = (await open_page(server.url, width=375, height=720)).page
        token = page.locator("#token")
        await expect(token).to_be_focused()  # the server answered 401: the page asks
        await page.keyboard.type("s3cret")
        await page.keyboard.press("Enter")
        await expect(page.locator("#token-form")).to_be_hidden()
        await expect(page.locator("#input")).to_be_focused()
        # Asked again with the token: the greeting and the commands to try.
        await expect(page.locator("#agent-name")).to_have_text("demo")
        await expect(page.locator("#suggestions .name").first).to_have_text("/help")

        await page.keyboard.type("see @b")
        option = page.locator("#menu [role=option]").first
        await expect(option.locator(".name")).to_have_text("@branch:")
        await page.keyboard.press("Tab")
        await page.keyboard.type("main")
        await expect(page.locator("#chips .chip-branch")).to_have_text("@branch:main")
        await page.keyboard.press("Enter")
        agent = await reply_done(page)
        await expect(agent.locator(".body")).to_have_text('You said: "see @branch:main"')
        await expect(page.locator(".user .chip-branch")).to_have_text("@branch:main")

        await page.keyboard.type("/")
        await expect(page.locator("#menu")).to_be_visible()
        await page.screenshot(path=screenshots / "phone.png")
        overflow = await page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow == 0
        box = await page.locator("#menu").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
        assert await page.evaluate("localStorage.getItem('slashgate.token')") == "s3cret"


async def test_event_types_the_page_does_not_know_are_shown_not_dropped(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    """Runtimes may stream event types this page predates (``plan``, ``usage``): a plan shows
    as a checklist and anything else as a generic card. The stream is fulfilled in the
    browser here, since no runtime of this gateway sends such events yet.
    """
    events = [
        ("accepted", {"conversation": "c", "classification": {}, "forwarded": None}),
        (
            "plan",
            {
                "entries": [
                    {"content": "Read the issue", "status": "completed"},
                    {"content": "Write the fix", "status": "in_progress"},
                    {"content": "Run the tests", "status": "pending"},
                ]
            },
        ),
        ("usage", {"input_tokens": 12, "output_tokens": 34}),
        ("delta", {"text": "All done."}),
        (
            "reply",
            {
                "conversation": "c",
                "classification": {},
                "forwarded": None,
                "reply": {"text": "All done.", "category": None, "stop_reason": "end_turn"},
            },
        ),
    ]
    stream = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)

    async def fulfil(route: Route) -> None:
        await route.fulfill(body=stream, content_type="text/event-stream")

    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url, routes={"**/v1/messages": fulfil})).page
        await page.keyboard.type("plan it")
        await page.keyboard.press("Enter")
        agent = await reply_done(page)
        await expect(agent.locator(".card-plan li")).to_have_text(
            ["☑ Read the issue", "▶ Write the fix", "☐ Run the tests"]
        )
        usage = agent.locator(".card-event")
        await expect(usage.locator("summary")).to_have_text("usage")
        await usage.locator("summary").click()
        await expect(usage.locator("pre")).to_contain_text('"output_tokens": 34')
        await expect(agent.locator(".body")).to_have_text("All done.")


async def test_escape_before_the_menu_opens_keeps_it_closed_and_enter_sends(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    # The completion answer is held until Escape was pressed: a menu that opened after the
    # Escape would take the Enter (accept "/echo ") and nothing would be sent.
    escaped = asyncio.Event()

    async def hold(route: Route) -> None:
        await escaped.wait()
        await route.continue_()

    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url, routes={"**/v1/complete?*": hold})).page
        async with page.expect_response(lambda r: "/v1/complete" in r.url) as answered:
            await page.locator("#input").fill("/echo")
            await page.keyboard.press("Escape")
            escaped.set()
        await answered.value
        await page.keyboard.press("Enter")
        await expect(page.locator(".user").last).to_have_text("/echo")
        await expect(page.locator("#input")).to_have_value("")
        await expect(page.locator("#menu")).to_be_hidden()


def completion_text(url: str) -> str:
    return parse_qs(urlsplit(url).query)["text"][0]


@dataclass
class HeldCompletions:
    """Every ``GET /v1/complete`` of a page held in the browser until the test lets it through
    to the gateway, by its text, in whatever order the test chooses.
    """

    routes: dict[str, asyncio.Future[Route]] = field(default_factory=dict)

    def _held(self, text: str) -> asyncio.Future[Route]:
        return self.routes.setdefault(text, asyncio.get_running_loop().create_future())

    async def hold(self, route: Route) -> None:
        self._held(completion_text(route.request.url)).set_result(route)

    async def answer(self, page: Page, text: str) -> None:
        """The answer for ``text``, once the page has it."""
        try:
            route = await asyncio.wait_for(asyncio.shield(self._held(text)), WAIT / 1000)
        except TimeoutError:
            composer = await page.locator("#input").input_value()
            raise AssertionError(
                f"no request for {text!r} (held: {[t for t, r in self.routes.items() if r.done()]},"
                f" composer: {composer!r})"
            ) from None
        async with page.expect_request_finished(
            lambda r: "/v1/complete" in r.url and completion_text(r.url) == text
        ) as finished:
            await route.continue_()
        await finished.value


async def test_completion_answers_in_any_order_leave_only_the_current_texts_menu(
    gateway_server: ServerFactory, open_page: OpenPage
) -> None:
    """Each keystroke asks for completion and none is aborted, so the answers of quick typing
    come back in any order: a menu the text has outgrown closes at once, a late answer for
    older text never shows, and Enter sends while answers are still on their way.
    """
    held = HeldCompletions()
    async with gateway_server(Deployer().runtime()) as server:
        page = (await open_page(server.url, routes={"**/v1/complete?*": held.hold})).page
        failed: list[str] = []
        page.on("requestfailed", lambda request: failed.append(request.url))
        menu = page.locator("#menu")
        names = menu.locator("[role=option] .name")

        await page.keyboard.type("/")
        await held.answer(page, "/")
        await expect(menu.get_by_text("/deploy", exact=True)).to_be_visible()

        await page.keyboard.type("se")  # "/s" and "/se" asked; neither answered yet
        await expect(menu).to_be_hidden()
        await held.answer(page, "/se")  # the newest first
        await expect(names).to_have_text(["/settings"])
        await held.answer(page, "/s")  # then the older one, for text the composer no longer has
        await expect(names).to_have_text(["/settings"])

        await page.keyboard.type("nd")  # "/sen" and "/send" asked, held
        await expect(menu).to_be_hidden()
        await page.keyboard.press("Enter")  # no menu takes the Enter: it sends
        await expect(page.locator(".user")).to_have_text(["/send"])
        await expect(page.locator("#input")).to_have_value("")
        await reply_done(page)
        await held.answer(page, "/send")
        await held.answer(page, "/sen")
        await expect(menu).to_be_hidden()
        assert failed == []  # every request came back: none was aborted
