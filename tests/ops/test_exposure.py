"""Secure defaults: the webhook API is not served open on a public address by accident, nor
through a reverse proxy in front of a gateway on loopback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from channels.webhook import exposure
from channels.webhook.exposure import open_webhook_refusal
from slashgate.server import StartError, running
from tests.conftest import ROOT, ServerFactory, make_settings
from tests.http import SERVE, STARTUP, serve_subprocess
from tests.metrics import scrape
from tests.ops.compose import load_compose


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "10.1.2.3", "gateway.example.com"])
def test_a_public_address_without_a_token_is_refused(host: str) -> None:
    refusal = open_webhook_refusal(make_settings(host=host))
    assert refusal is not None and "SLASHGATE_WEBHOOK_TOKEN" in refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_token(host: str) -> None:
    assert open_webhook_refusal(make_settings(host=host)) is None


@pytest.fixture
def container(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[bool], None]:
    """``container(True)``: the gateway finds a container's marker file; False: none."""

    def inside(found: bool) -> None:
        marker = tmp_path / ".dockerenv"
        if found:
            marker.touch()
        markers = (marker, tmp_path / "nothing")
        monkeypatch.setattr(exposure, "CONTAINER_MARKERS", markers, raising=False)

    return inside


@pytest.mark.parametrize(
    ("settings", "in_container", "refused"),
    [
        ({"webhook_token": SecretStr("t0ken")}, False, False),
        ({"webhook_allow_public": True}, False, False),
        ({"published_host": "127.0.0.1"}, True, False),  # compose: published on loopback only
        ({"published_host": "::1"}, True, False),
        ({"published_host": "127.0.0.1"}, False, True),  # the listen address decides
        ({"published_host": "localhost"}, False, True),
        ({"published_host": "0.0.0.0"}, True, True),
        ({"published_host": "0.0.0.0"}, False, True),
    ],
)
def test_on_every_interface(
    container: Callable[[bool], None],
    settings: dict[str, object],
    in_container: bool,
    refused: bool,
) -> None:
    container(in_container)
    refusal = open_webhook_refusal(make_settings(host="0.0.0.0", **settings))
    assert (refusal is not None) == refused


async def test_published_host_outside_a_container_waives_nothing(
    container: Callable[[bool], None],
) -> None:
    # The finding: SLASHGATE_PUBLISHED_HOST=127.0.0.1 with --host 0.0.0.0 started open.
    container(False)
    settings = make_settings(host="0.0.0.0", published_host="127.0.0.1")
    with pytest.raises(StartError) as refused:
        async with running(settings):
            pytest.fail("the gateway started on every interface without a token")
    said = str(refused.value)
    assert said.startswith("the webhook API (/v1/*) would be open to anyone who reaches 0.0.0.0")
    assert "published_host = 127.0.0.1 stands in for the token only in a container" in said


async def test_in_a_container_the_start_says_the_neighbours_reach_the_api(
    container: Callable[[bool], None], caplog: pytest.LogCaptureFixture
) -> None:
    container(True)
    settings = make_settings(host="0.0.0.0", published_host="127.0.0.1")
    with caplog.at_level(logging.WARNING, logger="slashgate"):
        async with running(settings) as server:
            port = server.url.rsplit(":", 1)[1]
            body = {"conversation": "c1", "user": "me", "text": "/echo neighbour"}
            async with aiohttp.ClientSession() as http:
                async with http.post(f"http://127.0.0.1:{port}/v1/messages", json=body) as resp:
                    assert (await resp.json())["reply"]["text"] == "neighbour"
    said = [r.getMessage() for r in caplog.records if "other containers" in r.getMessage()]
    assert len(said) == 1, said
    assert "reach the API without a token" in said[0] and "webhook_token" in said[0]


async def test_the_gateway_says_why_and_exits_instead_of_serving_open() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    process = await asyncio.create_subprocess_exec(
        *SERVE, "--host", "0.0.0.0", "--port", "0",
        env={**env, "SLASHGATE_STORE": "memory"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), STARTUP)
    assert process.returncode == 2, "a configuration error, like every other"
    assert b"listening" not in out
    last = err.decode().splitlines()[-1]
    assert last.startswith(
        "slashgate: bad configuration: the webhook API (/v1/*) would be open to anyone who "
        "reaches 0.0.0.0: set webhook_token (SLASHGATE_WEBHOOK_TOKEN)"
    )


async def test_served_open_on_purpose_it_says_so_loudly() -> None:
    async with serve_subprocess(*SERVE, "--host", "0.0.0.0", webhook_allow_public="true") as served:
        port = served.url.rsplit(":", 1)[1]
        body = {"conversation": "c1", "user": "me", "text": "/echo open"}
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{port}/v1/messages", json=body) as resp:
                assert (await resp.json())["reply"]["text"] == "open"
    warning = [line for line in served.output if "open to anyone" in line]
    assert warning and "WARNING" in warning[0], served.output


@pytest.mark.parametrize(
    ("dotenv", "refused"),
    [
        ({}, False),
        ({"SLASHGATE_PUBLISHED_HOST": "0.0.0.0"}, True),
        ({"SLASHGATE_PUBLISHED_HOST": "0.0.0.0", "SLASHGATE_WEBHOOK_TOKEN": "t0ken"}, False),
    ],
)
def test_compose_publishes_on_loopback_unless_told_and_the_gateway_follows(
    container: Callable[[bool], None], dotenv: dict[str, str], refused: bool
) -> None:
    container(True)  # the image runs in one
    gateway = load_compose(ROOT / "compose.yaml", dotenv)["services"]["gateway"]
    published = dotenv.get("SLASHGATE_PUBLISHED_HOST", "127.0.0.1")
    assert gateway["ports"] == [f"{published}:8080:8080"]
    environment = {**dotenv, **gateway["environment"]}  # compose's environment wins over .env
    settings = make_settings(
        host="0.0.0.0",  # the image's CMD
        published_host=environment["SLASHGATE_PUBLISHED_HOST"],
        webhook_token=SecretStr(t) if (t := environment.get("SLASHGATE_WEBHOOK_TOKEN")) else None,
    )
    assert (open_webhook_refusal(settings) is not None) == refused


# -- behind a reverse proxy ------------------------------------------------------------------

MESSAGE = {"conversation": "c1", "user": "me", "text": "/echo proxied"}
PROXIED = [
    {"X-Forwarded-For": "203.0.113.9"},  # nginx, Caddy, Traefik, Apache
    {"Forwarded": "for=203.0.113.9;proto=https;host=gateway.example.com"},  # RFC 7239
    {"X-Real-IP": "203.0.113.9"},
    {"X-Forwarded-Host": "gateway.example.com"},
]


async def test_an_api_request_through_a_proxy_without_a_token_is_a_403(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # The finding: docs/deploy.md's proxy forwarded every path to a gateway on loopback (so
    # its refusal to start open never fired), and /v1/* ran the agent for anyone.
    with caplog.at_level(logging.WARNING, logger="slashgate"):
        async with gateway_server() as server, aiohttp.ClientSession() as http:
            for headers in PROXIED:
                url = f"{server.url}/v1/messages"
                async with http.post(url, json=MESSAGE, headers=headers) as resp:
                    body = await resp.json()
                    assert resp.status == 403, body
                assert body["error"]["code"] == "proxy_needs_token"
                assert "webhook_token" in body["error"]["message"]
            async with http.get(f"{server.url}/v1/commands", headers=PROXIED[0]) as resp:
                assert resp.status == 403
            for page in ("/chat", "/healthz"):  # not the API: nothing runs there
                async with http.get(f"{server.url}{page}", headers=PROXIED[0]) as resp:
                    assert resp.status == 200
            seen = await scrape(server.url)
    assert seen.total("slashgate_inputs_total") == 0
    assert seen.value("slashgate_http_refused_total", reason="proxy") == len(PROXIED) + 1
    # Each refusal has its line in slashgate.http (rate-limited); the warning is once.
    warned = [r for r in caplog.records if r.name == "slashgate" and "proxy" in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING  # one line, not one each
    said = warned[0].getMessage()
    assert "webhook_token (SLASHGATE_WEBHOOK_TOKEN)" in said and "X-Forwarded-For" in said


@pytest.mark.parametrize(
    "settings", [{"webhook_token": SecretStr("t0ken")}, {"webhook_allow_public": True}]
)
async def test_through_a_proxy_with_a_token_or_open_on_purpose(
    gateway_server: ServerFactory, settings: dict[str, object]
) -> None:
    auth = {"Authorization": "Bearer t0ken"} if "webhook_token" in settings else {}
    async with gateway_server(**settings) as server, aiohttp.ClientSession() as http:
        for headers in PROXIED:
            url = f"{server.url}/v1/messages"
            async with http.post(url, json=MESSAGE, headers={**headers, **auth}) as resp:
                assert resp.status == 200
                assert (await resp.json())["reply"]["text"] == "proxied"


DEPLOY = ROOT / "docs" / "deploy.md"
PLATFORM_ROUTES = {"/telegram/webhook", "/slack/events", "/discord/interactions"}


def test_the_deploy_guides_proxy_examples_are_closed() -> None:
    """Each proxy example forwards only the platforms' routes, or says to set webhook_token."""
    text = DEPLOY.read_text(encoding="utf-8")
    caddyfiles = re.findall(r"```caddyfile\n(.*?)```", text, re.S)
    assert len(caddyfiles) >= 2
    for example in caddyfiles:
        matchers = re.findall(r"@(\w+) path ([^\n]+)", example)
        forwarded = re.findall(r"handle @(\w+) \{", example)
        if "webhook_token" in example:  # /v1/* too: the gateway needs its token
            assert "allowed_hosts" in example, example
            continue
        # Only the platforms' routes reach the gateway: the rest is answered by the proxy.
        assert forwarded, example
        paths = {p for name, listed in matchers if name in forwarded for p in listed.split()}
        assert paths and paths <= PLATFORM_ROUTES, example
        assert example.count("reverse_proxy") == len(forwarded), example
    nginx = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    assert "location / {" in nginx and "SLASHGATE_WEBHOOK_TOKEN" in nginx
