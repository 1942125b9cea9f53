"""Another site's page in a real browser against the gateway on 127.0.0.1 with no token (issue
32): what the browser sends for it without asking (a fetch with a text/plain, form or
multipart body, a form submitted with enctype text/plain) runs nothing. A site named in
cors_origins calls the API from its page, preflight and all, and reads the reply.
"""

from __future__ import annotations

import json

from aiohttp import web
from playwright.async_api import Browser

from tests.conftest import ServerFactory
from tests.http import serve_app
from tests.metrics import scrape

from .conftest import HOSTILE_SITE as SITE
from .conftest import LOOP, WAIT

pytestmark = LOOP

MESSAGE = {"conversation": "c1", "user": "me", "text": "/echo pwned"}

ATTACK = """<!doctype html><title>loading</title>
<iframe name="sink"></iframe>
<form id="form" method="post" enctype="text/plain" target="sink" action="GATEWAY/v1/messages">
<input type="hidden" name='FIELD_NAME' value='FIELD_VALUE'></form>
<script>
const url = "GATEWAY/v1/messages";
const text = JSON.stringify(MESSAGE);
const form = new FormData();
for (const [k, v] of Object.entries(MESSAGE)) form.append(k, v);
const sent = [
  fetch(url, {method: "POST", mode: "no-cors",
              headers: {"Content-Type": "text/plain"}, body: text}),
  fetch(url, {method: "POST", mode: "no-cors",
              headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: text}),
  fetch(url, {method: "POST", mode: "no-cors", body: form}),
  new Promise((done) => {
    document.querySelector("iframe").onload = done;
    document.getElementById("form").submit();
  }),
];
Promise.allSettled(sent).then(() => { document.title = "sent"; });
</script>"""

CALL = """<!doctype html><title>loading</title><script>
fetch("GATEWAY/v1/messages", {method: "POST", headers: {"Content-Type": "application/json"},
                               body: JSON.stringify(MESSAGE)})
  .then((r) => r.json()).then((body) => { document.title = "reply: " + body.reply.text; },
                                (error) => { document.title = "failed: " + error; });
</script>"""


def page_of(html: str, gateway: dict[str, str]) -> web.Application:
    """The page, naming ``gateway["url"]`` as it is when asked for."""
    # A form with enctype text/plain sends name=value: a name that opens a JSON object and a
    # value that closes it make a body that is JSON.
    text = json.dumps(MESSAGE)
    html = (
        html.replace("MESSAGE", text)
        .replace("FIELD_NAME", text[:-1] + ', "x": "')
        .replace("FIELD_VALUE", '"}')
    )

    async def serve(request: web.Request) -> web.Response:
        return web.Response(text=html.replace("GATEWAY", gateway["url"]), content_type="text/html")

    app = web.Application()
    app.router.add_get("/", serve)
    return app


async def test_another_sites_page_runs_nothing(
    gateway_server: ServerFactory, browser: Browser
) -> None:
    gateway: dict[str, str] = {}
    async with gateway_server() as server, serve_app(page_of(ATTACK, gateway)) as site:
        gateway["url"] = server.url
        page = await browser.new_page()
        await page.goto(site.replace("127.0.0.1", SITE) + "/")
        await page.wait_for_function("document.title === 'sent'", timeout=WAIT)
        seen = await scrape(server.url)
        await page.close()
    assert seen.total("slashgate_inputs_total") == 0
    assert seen.value("slashgate_http_refused_total", reason="origin") == 4


async def test_a_site_in_cors_origins_calls_the_api_from_its_page(
    gateway_server: ServerFactory, browser: Browser
) -> None:
    gateway: dict[str, str] = {}
    async with serve_app(page_of(CALL, gateway)) as site:
        origin = site.replace("127.0.0.1", SITE)
        async with gateway_server(cors_origins=[origin]) as server:
            gateway["url"] = server.url
            page = await browser.new_page()
            await page.goto(origin + "/")
            await page.wait_for_function("document.title !== 'loading'", timeout=WAIT)
            assert await page.title() == "reply: pwned"
            await page.close()
