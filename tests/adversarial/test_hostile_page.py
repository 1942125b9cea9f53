"""A hostile web page against the HTTP API on 127.0.0.1 with no token (issue 32): what a
browser lets any site send without asking (text/plain, form and multipart POSTs) and what a
page whose name is rebound to 127.0.0.1 sends (its own name as the Host) is refused with a
4xx and the usual error body before anything runs, and counted. The gateway's own pages,
curl with a JSON type, a site named in cors_origins and the platforms' signed routes go on
working.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDictProxy

from slashgate.config import Settings
from slashgate.server import Running
from tests.conftest import ServerFactory
from tests.metrics import scrape
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.helpers import PRIVATE, SECRET, Start, message_update

EVIL = "http://evil.example"
APP = "https://app.example"
MESSAGE = {"conversation": "c1", "user": "me", "text": "/echo pwned"}
Answer = tuple[int, Any, CIMultiDictProxy[str]]


def multipart() -> aiohttp.FormData:
    form = aiohttp.FormData(default_to_multipart=True)
    for name, value in MESSAGE.items():
        form.add_field(name, value)
    return form


# What a page may send to any site without a preflight: the "simple" media types.
SIMPLE = {
    "text/plain": lambda: (json.dumps(MESSAGE), {"Content-Type": "text/plain;charset=UTF-8"}),
    "form": lambda: (
        json.dumps(MESSAGE),
        {"Content-Type": "application/x-www-form-urlencoded"},
    ),
    "multipart": lambda: (multipart(), {}),
    "no type": lambda: (json.dumps(MESSAGE).encode(), {"Content-Type": ""}),
}


async def send(server: Running, method: str, path: str, data: Any = None, **headers: str) -> Answer:
    """One request; ``headers`` may name the Host. (status, JSON body or text, headers)"""
    skip = ["Content-Type"] if headers.get("Content-Type") == "" else []
    sent = {k: v for k, v in headers.items() if v != ""}
    async with (
        aiohttp.ClientSession(skip_auto_headers=skip) as http,
        http.request(method, server.url + path, data=data, headers=sent) as response,
    ):
        text = await response.text()
        try:
            body = json.loads(text)
        except ValueError:
            body = text
        return response.status, body, response.headers


def refused(answer: Answer, status: int, code: str) -> str:
    """The usual error body with ``code``; its message."""
    assert (answer[0], answer[1]["error"]["code"]) == (status, code), answer[:2]
    message: str = answer[1]["error"]["message"]
    return message


async def ran(server: Running) -> float:
    """Inputs the webhook handled (an input refused before its route never counts)."""
    return (await scrape(server.url)).total("slashgate_inputs_total", channel="webhook")


async def refusals(server: Running, reason: str) -> float:
    return (await scrape(server.url)).value("slashgate_http_refused_total", reason=reason)


# -- another site's page -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SIMPLE))
async def test_a_cross_site_post_of_any_simple_type_is_refused_and_nothing_runs(
    gateway_server: ServerFactory, kind: str
) -> None:
    async with gateway_server() as server:
        data, headers = SIMPLE[kind]()
        message = refused(
            await send(server, "POST", "/v1/messages", data, Origin=EVIL, **headers),
            403,
            "forbidden_origin",
        )
        assert "cors_origins" in message
        assert await ran(server) == 0
        assert await refusals(server, "origin") == 1


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages", {**MESSAGE, "text": "/mode code"}),  # switched an ACP agent's mode
        ("/v1/classify", {"conversation": "c1", "text": "/echo x"}),
        ("/v1/permissions/r1", {"conversation": "c1", "option": "allow"}),
    ],
)
async def test_every_post_of_the_api_refuses_another_sites_page_even_as_json(
    gateway_server: ServerFactory, path: str, body: dict[str, Any]
) -> None:
    async with gateway_server() as server:
        for origin in (EVIL, "null", f"{server.url.replace('127.0.0.1', 'localhost')}"):
            answer = await send(server, "POST", path, json.dumps(body), Origin=origin, **_JSON)
            refused(answer, 403, "forbidden_origin")
        # No Origin, but the browser says where the request came from.
        answer = await send(
            server, "POST", path, json.dumps(body), **{"Sec-Fetch-Site": "cross-site"}, **_JSON
        )
        refused(answer, 403, "forbidden_origin")
        assert await ran(server) == 0
        assert await refusals(server, "origin") == 4


_JSON = {"Content-Type": "application/json"}


async def test_the_gateways_own_pages_and_curl_go_on_working(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server() as server:
        port = server.url.rsplit(":", 1)[1]
        body = json.dumps(MESSAGE)
        # The web chat: same origin, whatever name the browser used for this address.
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"chat.localhost:{port}"):
            status, answer, _ = await send(
                server, "POST", "/v1/messages", body,
                Host=host, Origin=f"http://{host}", **{"Sec-Fetch-Site": "same-origin"}, **_JSON,
            )  # fmt: skip
            assert (status, answer["reply"]["text"]) == (200, "pwned"), answer
        # curl: no Origin; JSON, or a multipart form with files.
        status, answer, _ = await send(server, "POST", "/v1/messages", body, **_JSON)
        assert (status, answer["reply"]["text"]) == (200, "pwned"), answer
        status, answer, _ = await send(server, "POST", "/v1/messages", multipart())
        assert (status, answer["reply"]["text"]) == (200, "pwned"), answer
        # Reading is not refused (the browser keeps another site's page from the answer).
        status, _, headers = await send(server, "GET", "/v1/commands", Origin=EVIL)
        assert status == 200 and "Access-Control-Allow-Origin" not in headers
        assert await ran(server) == 5


@pytest.mark.parametrize("kind", ["text/plain", "form", "no type"])
async def test_a_body_that_is_not_json_is_a_415_also_without_an_origin(
    gateway_server: ServerFactory, kind: str
) -> None:
    async with gateway_server() as server:
        data, headers = SIMPLE[kind]()
        for path in ("/v1/messages", "/v1/classify", "/v1/permissions/r1"):
            message = refused(
                await send(server, "POST", path, data, **headers), 415, "unsupported_media_type"
            )
            assert "application/json" in message
            if kind == "form":  # curl -d without -H 'Content-Type: application/json'
                assert "curl -d needs -H 'Content-Type: application/json'" in message
        assert await ran(server) == 0
        assert await refusals(server, "content_type") == 3


# -- a name rebound to this address --------------------------------------------------------------


async def test_a_rebound_host_name_is_a_421_and_nothing_runs_or_is_read(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server() as server:
        port = server.url.rsplit(":", 1)[1]
        rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
        message = refused(
            await send(server, "POST", "/v1/messages", json.dumps(MESSAGE), **rebound, **_JSON),
            421,
            "misdirected_request",
        )
        assert "allowed_hosts" in message
        for path in ("/v1/commands", "/v1/complete?text=/e", "/chat", "/metrics", "/healthz"):
            refused(await send(server, "GET", path, **rebound), 421, "misdirected_request")
        for host in ("attacker.example", "127.0.0.1.attacker.example", "bad host", "x:99999"):
            answer = await send(server, "GET", "/v1/commands", Host=host)
            refused(answer, 421, "misdirected_request")
        assert await ran(server) == 0
        assert await refusals(server, "host") == 10


async def test_the_hosts_a_gateway_answers_to(gateway_server: ServerFactory) -> None:
    hosts = ["gateway.example.com", "*.internal.example"]
    async with gateway_server(allowed_hosts=hosts, published_host="192.0.2.7") as server:
        port = server.url.rsplit(":", 1)[1]
        for host in (
            f"127.0.0.1:{port}", "127.0.0.2", f"[::1]:{port}", "localhost", "LOCALHOST.",
            "app.localhost", "10.1.2.3:8080", "192.0.2.7", "gateway.example.com",
            "Gateway.Example.Com:443", "a.internal.example", "b.a.internal.example",
        ):  # fmt: skip
            status, _, _ = await send(server, "GET", "/v1/commands", Host=host)
            assert status == 200, host
        for host in ("internal.example", "example.com", "gateway.example.com.evil", "xlocalhost"):
            answer = await send(server, "GET", "/v1/commands", Host=host)
            refused(answer, 421, "misdirected_request")
    async with gateway_server(allowed_hosts=["*"]) as server:
        status, _, _ = await send(server, "GET", "/v1/commands", Host="anything.example")
        assert status == 200


# -- the platforms' routes -------------------------------------------------------------------------


async def test_the_platform_routes_keep_their_own_checks_and_nothing_else(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        url = f"{served.server.url}/telegram/webhook"
        foreign = {
            "Host": "attacker.example",
            "Origin": EVIL,
            "X-Forwarded-For": "203.0.113.9",
            "Content-Type": "text/plain",
        }
        for secret, status in ((SECRET, 200), ("wrong", 401)):
            body = json.dumps(message_update(PRIVATE, "/echo signed"))
            headers = {**foreign, "X-Telegram-Bot-Api-Secret-Token": secret}
            async with served.http.post(url, data=body, headers=headers) as response:
                assert response.status == status, await response.text()
        assert await refusals(served.server, "host") == 0


# -- a site that may call the API (cors_origins) ---------------------------------------------------


async def test_a_listed_origin_gets_cors_answers_and_its_preflights(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server(cors_origins=[APP]) as server:
        ask = {"Origin": APP, "Access-Control-Request-Method": "POST"}
        status, _, headers = await send(
            server, "OPTIONS", "/v1/messages", **ask,
            **{"Access-Control-Request-Headers": "content-type,authorization"},
        )  # fmt: skip
        assert status == 204
        assert headers["Access-Control-Allow-Origin"] == APP
        assert "POST" in headers["Access-Control-Allow-Methods"]
        allowed = headers["Access-Control-Allow-Headers"].lower()
        assert "content-type" in allowed and "authorization" in allowed
        assert "Origin" in headers.getall("Vary")

        body = json.dumps(MESSAGE)
        status, answer, headers = await send(
            server, "POST", "/v1/messages", body, Origin=APP, **_JSON
        )
        assert (status, answer["reply"]["text"]) == (200, "pwned")
        assert headers["Access-Control-Allow-Origin"] == APP
        assert "Idempotent-Replayed" in headers["Access-Control-Expose-Headers"]
        stream = {"Origin": APP, "Accept": "text/event-stream", **_JSON}
        status, _, headers = await send(server, "POST", "/v1/messages", body, **stream)
        assert status == 200 and headers["Access-Control-Allow-Origin"] == APP

        refused(await send(server, "OPTIONS", "/v1/messages", **{**ask, "Origin": EVIL}), 403,
                "forbidden_origin")  # fmt: skip
        answer = await send(server, "POST", "/v1/messages", body, Origin=EVIL, **_JSON)
        refused(answer, 403, "forbidden_origin")
        assert "Access-Control-Allow-Origin" not in answer[2]
        # Not a preflight: OPTIONS is still no method of the route.
        status, _, _ = await send(server, "OPTIONS", "/v1/messages", Origin=APP)
        assert status == 405
        assert await ran(server) == 2


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("cors_origins", ["*"]),
        ("cors_origins", ["null"]),
        ("cors_origins", ["https://app.example/path"]),
        ("cors_origins", ["app.example"]),
        ("allowed_hosts", ["https://gateway.example.com"]),
        ("allowed_hosts", ["gateway.example.com:8443"]),
    ],
)
def test_settings_that_name_no_origin_or_host_are_refused(setting: str, value: list[str]) -> None:
    with pytest.raises(ValueError, match=r"is not an? (origin|host name)"):
        Settings.model_validate({setting: value})


def test_the_settings_are_written_canonically() -> None:
    settings = Settings.model_validate(
        {
            "cors_origins": ["HTTPS://App.Example:443", "http://localhost:3000"],
            "allowed_hosts": ["Gateway.Example.COM", "*.Internal.Example", "::1"],
        }
    )
    assert settings.cors_origins == [APP, "http://localhost:3000"]
    assert settings.allowed_hosts == ["gateway.example.com", "*.internal.example", "::1"]
