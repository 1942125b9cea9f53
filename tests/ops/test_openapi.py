"""``/openapi.json`` describes every route, from the models the handlers answer with, and a
schema fuzzer (schemathesis) finds no 5xx and no answer that departs from it.
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr, TypeAdapter

from channels.webhook.wire import SSE_EVENTS, MessageOut
from tests.conftest import ServerFactory
from tests.discord.fake import BOT_TOKEN as DISCORD_TOKEN
from tests.discord.fake import FakeDiscord, fake_discord
from tests.discord.interactions import PUBLIC_KEY
from tests.http import read_events
from tests.slack.slack_fake import BOT_TOKEN, SIGNING_SECRET, fake_slack
from tests.telegram.fake_bot_api import FakeBotAPI

TOKEN = "bearer-for-the-fuzzer"
TELEGRAM_SECRET = "telegram-secret-0123456789"  # sent on every request: updates get past the check
EXAMPLES = 25  # per operation: bounded, so the run takes seconds
CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance,response_headers_conformance,negative_data_rejection,"
    "unsupported_method,ignored_auth,missing_required_header"
)


def _channels(telegram: FakeBotAPI, slack: Any, discord: FakeDiscord) -> dict[str, Any]:
    return {
        "webhook_token": SecretStr(TOKEN),
        "telegram_token": SecretStr(telegram.token),
        "telegram_secret": SecretStr(TELEGRAM_SECRET),
        "telegram_api_base": telegram.url,
        "slack_bot_token": SecretStr(BOT_TOKEN),
        "slack_signing_secret": SecretStr(SIGNING_SECRET),
        "slack_api_base": slack.api_base,
        "discord_token": SecretStr(DISCORD_TOKEN),
        "discord_public_key": PUBLIC_KEY,
        "discord_api_base": discord.api_base,
        "run_timeout": 5.0,
    }


async def _document(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/openapi.json") as response:
        assert response.status == 200
        document: dict[str, Any] = await response.json()
        return document


async def test_every_route_is_documented_with_its_errors_and_events(
    gateway_server: ServerFactory,
) -> None:
    async with FakeBotAPI() as telegram, fake_slack() as slack, fake_discord() as discord:
        async with gateway_server(**_channels(telegram, slack, discord)) as server:
            document = await _document(server.url)
            routes = {
                (route.method.lower(), route.resource.canonical)
                for route in server.app.router.routes()
                if route.method != "HEAD" and route.resource is not None
            }
    assert document["openapi"] == "3.1.0"
    documented = {(m, path) for path, ops in document["paths"].items() for m in ops}
    assert documented == routes
    assert {path for _, path in routes} >= {
        "/v1/messages", "/v1/commands", "/telegram/webhook", "/slack/events",
        "/discord/interactions", "/healthz", "/readyz", "/metrics", "/openapi.json",
    }  # fmt: skip
    signed = document["paths"]["/discord/interactions"]["post"]
    headers = {p["name"] for p in signed["parameters"] if p["required"]}
    assert headers == {"X-Signature-Ed25519", "X-Signature-Timestamp"}
    assert {"400", "401", "413", "503"} <= set(signed["responses"])
    post = document["paths"]["/v1/messages"]["post"]
    assert post["security"] == [{"bearer": []}]
    for status in ("400", "401", "413", "422"):
        schema = post["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorOut"}
    streamed = post["responses"]["200"]["content"]["text/event-stream"]["x-events"]
    assert set(streamed) == {
        "accepted", "delta", "tool", "permission", "status", "plan", "reasoning", "usage", "reply",
    }  # fmt: skip
    schemas = document["components"]["schemas"]
    generated = MessageOut.model_json_schema(ref_template="#/components/schemas/{model}")
    generated.pop("$defs")
    assert schemas["MessageOut"] == generated  # the handler's own model, nothing written by hand
    for name, model in SSE_EVENTS.items():
        assert streamed[name] == {"$ref": f"#/components/schemas/{model.__name__}"}


async def test_streamed_events_match_their_documented_models(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server() as server, aiohttp.ClientSession() as http:
        body = {"conversation": "c1", "user": "u1", "text": "/echo hi"}
        headers = {"Accept": "text/event-stream"}
        async with http.post(f"{server.url}/v1/messages", json=body, headers=headers) as resp:
            events = [event async for event in read_events(resp)]
    assert events[0][0] == "accepted"
    for name, data in events:
        TypeAdapter(SSE_EVENTS[name]).validate_python(data)
    assert events[-1][0] == "reply"


async def test_a_schema_fuzzer_finds_no_server_error_and_no_departure_from_the_schema(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    async with FakeBotAPI() as telegram, fake_slack() as slack, fake_discord() as discord:
        async with gateway_server(**_channels(telegram, slack, discord)) as server:
            fuzzer = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "schemathesis.cli", "run", f"{server.url}/openapi.json",
                "--checks", CHECKS, "--max-examples", str(EXAMPLES), "--seed", "14",
                "--generation-database", "none", "--workers", "1", "--no-color",
                "--header", f"Authorization: Bearer {TOKEN}", "--request-timeout", "30",
                "--header", f"X-Telegram-Bot-Api-Secret-Token: {TELEGRAM_SECRET}",
                cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            output, _ = await fuzzer.communicate()
    report = output.decode()
    assert fuzzer.returncode == 0, report[-6000:]
    generated = re.search(r"(\d+) generated, (\d+) passed", report)
    assert generated is not None and generated[1] == generated[2], report[-3000:]
