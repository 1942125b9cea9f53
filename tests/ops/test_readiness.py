"""``GET /readyz``: 200 only when the runtime can open sessions and every channel is connected;
else 503 naming what is not ready.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from pydantic import SecretStr

from slashgate.registry import build_runtime
from tests.conftest import ServerFactory, make_settings
from tests.slack.slack_fake import APP_TOKEN, fake_slack
from tests.slack.slack_harness import slack_gateway
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.helpers import starter

READY = {"ready": True, "detail": None}


async def readyz(url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz") as response:
        return response.status, await response.json()


async def ready_soon(url: str, rounds: int = 500) -> dict[str, Any]:
    """The readiness body once it says ready (a connection made in the background)."""
    for _ in range(rounds):
        status, body = await readyz(url)
        if status == 200:
            return body
    raise AssertionError(f"never ready: {body}")


async def test_ready_with_the_embedded_runtime(gateway_server: ServerFactory) -> None:
    async with gateway_server() as server:
        status, body = await readyz(server.url)
    assert status == 200
    assert body == {
        "status": "ready",
        "checks": {"runtime": READY, "store": READY, "webhook": READY, "webchat": READY},
    }


async def test_not_ready_when_the_agent_program_is_missing(gateway_server: ServerFactory) -> None:
    command = ["no-such-agent-program", "--mode", "rpc"]
    runtime = build_runtime(make_settings(runtime="pi", pi_command=command))
    async with gateway_server(runtime) as server:
        status, body = await readyz(server.url)
    assert (status, body["status"]) == (503, "not_ready")
    assert body["checks"]["runtime"] == {
        "ready": False,
        "detail": "no-such-agent-program not found or not executable",
    }
    assert body["checks"]["webhook"] == READY


async def test_telegram_is_ready_once_polling_runs_or_its_webhook_is_registered(
    gateway_server: ServerFactory,
) -> None:
    async with FakeBotAPI() as fake:
        start = starter(gateway_server, fake)
        async with start(telegram_mode="polling") as served:
            status, body = await readyz(served.server.url)
            assert (status, body["checks"]["telegram"]) == (200, READY)
        url = "https://bot.example.com/telegram/webhook"
        async with start(telegram_webhook_url=url) as served:
            status, body = await readyz(served.server.url)
        assert (status, body["checks"]["telegram"]) == (200, READY)
        assert fake.webhook is not None and fake.webhook["url"] == url


async def test_slack_is_ready_once_socket_mode_is_up_and_not_with_a_refused_token(
    gateway_server: ServerFactory,
) -> None:
    async with fake_slack() as fake:
        async with slack_gateway(
            gateway_server, fake, slack_app_token=SecretStr(APP_TOKEN)
        ) as harness:
            body = await ready_soon(harness.server.url)
        assert body["checks"]["slack"] == READY
        async with slack_gateway(
            gateway_server, fake, slack_bot_token=SecretStr("xoxb-revoked")
        ) as harness:
            status, body = await readyz(harness.server.url)
    assert status == 503
    slack = body["checks"]["slack"]
    assert slack["ready"] is False and "invalid_auth" in slack["detail"]
    assert "xoxb-revoked" not in str(body)
