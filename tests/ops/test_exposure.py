"""Secure defaults: the webhook API is not served open on a public address by accident."""

from __future__ import annotations

import asyncio
import os

import aiohttp
import pytest
from pydantic import SecretStr

from channels.webhook.exposure import open_webhook_refusal
from tests.conftest import ROOT, make_settings
from tests.http import SERVE, STARTUP, serve_subprocess
from tests.ops.compose import load_compose


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "10.1.2.3", "gateway.example.com"])
def test_a_public_address_without_a_token_is_refused(host: str) -> None:
    refusal = open_webhook_refusal(make_settings(host=host))
    assert refusal is not None and "SLASHGATE_WEBHOOK_TOKEN" in refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost"])
def test_loopback_needs_no_token(host: str) -> None:
    assert open_webhook_refusal(make_settings(host=host)) is None


@pytest.mark.parametrize(
    ("settings", "refused"),
    [
        ({"webhook_token": SecretStr("t0ken")}, False),
        ({"webhook_allow_public": True}, False),
        ({"published_host": "127.0.0.1"}, False),  # compose: published on loopback only
        ({"published_host": "0.0.0.0"}, True),
    ],
)
def test_on_every_interface(settings: dict[str, object], refused: bool) -> None:
    refusal = open_webhook_refusal(make_settings(host="0.0.0.0", **settings))
    assert (refusal is not None) == refused


async def test_the_gateway_says_why_and_exits_instead_of_serving_open() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    process = await asyncio.create_subprocess_exec(
        *SERVE, "--host", "0.0.0.0", "--port", "0",
        env={**env, "SLASHGATE_STORE": "memory"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), STARTUP)
    assert process.returncode == 1
    assert b"listening" not in out
    last = err.decode().splitlines()[-1]
    assert last.startswith(
        "slashgate: cannot start: the webhook API (/v1/*) would be open to anyone who "
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
    dotenv: dict[str, str], refused: bool
) -> None:
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
