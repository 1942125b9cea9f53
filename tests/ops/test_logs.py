"""Logs: JSON lines with what they are about, one rate-limited line per refused request and no
traceback for a client's mistake, and no configured secret anywhere in the output.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import aiohttp
from pydantic import SecretStr

from gateway import logs
from gateway.logs import Sampler
from tests.conftest import ServerFactory, make_settings
from tests.http import serve_subprocess
from tests.ops.test_metrics import _Broken
from tests.slack.slack_fake import (
    APP_TOKEN,
    BOT_TOKEN,
    SIGNING_SECRET,
    Scripted,
    event_body,
    fake_slack,
    mention,
    signed_headers,
)
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.helpers import PRIVATE, message_update

WEBHOOK_TOKEN = "whk-0123456789abcdef"
TELEGRAM_SECRET = "tg-secret-0123456789"


@contextmanager
def captured(**settings: Any) -> Iterator[io.StringIO]:
    """The process's logging configured as ``slashgate serve`` does, written to a buffer."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    stream = io.StringIO()
    logs.configure(make_settings(**settings), stream)
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)


async def test_json_lines_carry_channel_conversation_turn_and_message_id(
    gateway_server: ServerFactory,
) -> None:
    with captured(log_format="json") as stream:
        async with gateway_server(_Broken("turn")) as server, aiohttp.ClientSession() as http:
            body = {"conversation": "c9", "user": "u1", "text": "hello", "id": "m-42"}
            async with http.post(f"{server.url}/v1/messages", json=body) as response:
                assert response.status == 200
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]
    [failure] = [line for line in lines if line["message"].startswith("runtime failed")]
    assert failure["level"] == "ERROR" and failure["logger"] == "slashgate.core"
    assert (failure["channel"], failure["conversation"], failure["message_id"]) == (
        "webhook",
        "c9",
        "m-42",
    )
    assert len(failure["turn_id"]) == 16
    assert "ConnectionResetError: the agent's pipe broke" in failure["exc"]
    assert failure["time"].endswith("Z")


async def test_a_turn_is_one_json_line_with_its_fields_as_fields(
    gateway_server: ServerFactory,
) -> None:
    with captured(log_format="json") as stream:
        async with gateway_server() as server, aiohttp.ClientSession() as http:
            body = {"conversation": "c1", "user": "u1", "text": "/echo hi", "id": "m-7"}
            async with http.post(f"{server.url}/v1/messages", json=body) as response:
                assert response.status == 200
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    [turn] = [line for line in lines if line["message"] == "turn"]
    duration = turn.pop("duration")
    assert isinstance(duration, float) and 0 <= duration < 60
    assert {k: v for k, v in turn.items() if k != "time"} == {
        "level": "INFO",
        "logger": "slashgate.core",
        "message": "turn",
        "channel": "webhook",
        "conversation": "c1",
        "message_id": "m-7",
        "classification": "supported",
        "command": "echo",
        "outcome": "ok",
    }


async def test_in_json_every_line_of_the_process_is_json_the_url_included() -> None:
    async with serve_subprocess(log_format="json") as served, aiohttp.ClientSession() as http:
        async with http.get(f"{served.url}/healthz") as response:
            assert response.status == 200
    lines = [json.loads(line) for line in "".join(served.output).splitlines()]
    said = {line["logger"]: line["message"] for line in lines}
    ready = [line["message"] for line in lines if line["logger"] == "slashgate.ready"]
    assert ready[0] == f"slashgate listening on {served.url}"
    assert f"web chat: {served.url}/chat" in ready  # the addresses to open follow it
    assert said["slashgate"] == "stopped"


async def test_each_refused_request_is_one_line_rate_limited_and_without_traceback(
    gateway_server: ServerFactory,
) -> None:
    with captured() as stream:
        async with gateway_server(webhook_token=SecretStr(WEBHOOK_TOKEN)) as server:
            async with aiohttp.ClientSession() as http:
                url = f"{server.url}/v1/messages"
                auth = {
                    "Authorization": f"Bearer {WEBHOOK_TOKEN}",
                    "Content-Type": "application/json",
                }
                async with http.post(url, data=b"{", headers=auth) as response:
                    assert response.status == 400
                async with http.post(url, json={}) as response:
                    assert response.status == 401
                for _ in range(40):
                    async with http.post(url, data=b"[", headers=auth) as response:
                        assert response.status == 400
            await _send_raw(server.url, b"GET /healthz HTTP/1.1\r\nX-Bad: a\x00b\r\n\r\n")
    output = stream.getvalue()
    refused = [line for line in output.splitlines() if "slashgate.http: refused" in line]
    assert "refused POST /v1/messages: 400 request body is not valid JSON" in refused[0]
    assert "refused POST /v1/messages: 401 missing or wrong Authorization" in refused[1]
    assert 10 <= len(refused) < 42  # the burst, then about one a second
    assert "malformed HTTP request: 400" in output
    assert "Traceback" not in output
    assert WEBHOOK_TOKEN not in output


async def _send_raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    assert answer.split(b" ")[1] == b"400", answer
    return answer


def test_the_sampler_holds_back_a_flood_and_says_how_much_it_held_back() -> None:
    now = [0.0]
    sampler = Sampler(rate=1.0, burst=3, clock=lambda: now[0])
    assert [sampler.allow() for _ in range(5)] == [True, True, True, False, False]
    assert sampler.held_back() == " (2 more not logged)"
    now[0] = 2.0
    assert [sampler.allow() for _ in range(3)] == [True, True, False]
    assert sampler.held_back() == " (1 more not logged)"
    assert sampler.held_back() == ""


@asynccontextmanager
async def _platforms() -> AsyncIterator[tuple[FakeBotAPI, Any]]:
    async with FakeBotAPI() as telegram, fake_slack() as slack:
        yield telegram, slack


async def test_no_secret_is_ever_logged(tmp_path: Any) -> None:
    """Every channel with its credentials, at DEBUG, through refusals and platform errors."""
    async with _platforms() as (telegram, slack):
        secrets = [telegram.token, TELEGRAM_SECRET, BOT_TOKEN, SIGNING_SECRET, APP_TOKEN]
        env = {
            "store": "memory",  # update ids repeat from one test run to the next
            "log_level": "DEBUG",
            "log_format": "json",
            "webhook_token": WEBHOOK_TOKEN,
            "telegram_token": telegram.token,
            "telegram_secret": TELEGRAM_SECRET,
            "telegram_api_base": telegram.url,
            "slack_bot_token": BOT_TOKEN,
            "slack_signing_secret": SIGNING_SECRET,
            "slack_app_token": APP_TOKEN,
            "slack_api_base": slack.api_base,
            # Strangers' messages must reach the platforms' failures below.
            "telegram_dm_policy": "open",
            "slack_group_policy": "open",
        }
        async with serve_subprocess(**env) as served, aiohttp.ClientSession() as http:
            post = _poster(http, served.url)
            auth = {"Authorization": f"Bearer {WEBHOOK_TOKEN}"}
            assert await post("/v1/messages", json={"text": "x"}) == 401
            wrong = {"Authorization": f"Bearer {WEBHOOK_TOKEN}x"}
            assert await post("/v1/messages", data=b"{}", headers=wrong) == 401
            message = {"conversation": "c1", "user": "u1", "text": "/echo hi"}
            assert await post("/v1/messages", json=message, headers=auth) == 200
            update_headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
            assert await post("/telegram/webhook", json=message_update(PRIVATE, "/x")) == 401
            telegram.redirect_loop("sendMessage")  # aiohttp's error quotes the URL
            update = message_update(PRIVATE, "/echo one")
            assert await post("/telegram/webhook", json=update, headers=update_headers) == 200
            await telegram.wait(lambda: bool(telegram.calls_to("sendMessage")))
            telegram.wrong_server("sendMessage")  # an HTML page quoting the path
            update = message_update(PRIVATE, "/echo two")
            assert await post("/telegram/webhook", json=update, headers=update_headers) == 200
            failing = Scripted(body={"ok": False, "error": "invalid_auth"})
            slack.script("chat.postMessage", failing, failing)
            body = event_body(mention("hello", ts="900.1"))
            headers = signed_headers(body, "application/json")
            assert await post("/slack/events", data=body, headers=headers) == 200
            await slack.wait_calls("chat.postMessage")
            assert await post("/slack/events", data=body, headers={}) == 401
        output = "".join(served.output)
    for secret in [*secrets, WEBHOOK_TOKEN]:
        assert secret not in output, secret
    for route in ("/v1/messages: 401", "/telegram/webhook: 401", "/slack/events: 401"):
        assert f"refused POST {route}" in output


def _poster(http: aiohttp.ClientSession, url: str) -> Callable[..., Any]:
    async def post(path: str, **kwargs: Any) -> int:
        async with http.post(f"{url}{path}", **kwargs) as response:
            await response.read()
            return response.status

    return post


def test_a_secret_that_reaches_a_log_call_is_masked_in_both_formats() -> None:
    """The last line of defence, for a library that logs a URL or an error quoting it."""
    token = "123456:AAE-secret/token+x"
    for log_format in ("text", "json"):
        with captured(log_format=log_format, telegram_token=SecretStr(token)) as stream:
            log = logging.getLogger("some.library")
            log.warning("GET https://api.telegram.org/bot%s/getMe", token)
            log.warning("quoted: %s", "123456%3AAAE-secret%2Ftoken%2Bx")
            try:
                raise ConnectionError(f"cannot reach /bot{token}/sendMessage")
            except ConnectionError:
                log.exception("request failed")
        output = stream.getvalue()
        assert token not in output and "AAE-secret" not in output
        assert output.count("[secret]") == 3


async def test_at_debug_the_libraries_log_no_message_text() -> None:
    """slack_sdk, slack_bolt, aiohttp... log request bodies at DEBUG: with log_level DEBUG they
    stay at library_log_level (INFO), and no message text reaches the log (issue 32).
    """
    text = "/echo the-words-of-a-user-4211"
    async with fake_slack() as slack:
        env = {
            "log_level": "DEBUG",
            "slack_bot_token": BOT_TOKEN,
            "slack_signing_secret": SIGNING_SECRET,
            "slack_api_base": slack.api_base,
            "slack_group_policy": "open",  # the mention must reach the runtime
        }
        async with serve_subprocess(**env) as served, aiohttp.ClientSession() as http:
            body = event_body(mention(text, ts="900.2"))
            headers = signed_headers(body, "application/json")
            post = _poster(http, served.url)
            assert await post("/slack/events", data=body, headers=headers) == 200
            await slack.wait_calls("chat.postMessage")
        output = "".join(served.output)
    assert "turn classification=supported command=echo outcome=ok" in output
    assert "the-words-of-a-user-4211" not in output  # slack_sdk logged each call's body


def test_library_log_level_lets_a_librarys_lines_through_up_to_log_level() -> None:
    for library, own, said in (
        ("INFO", "DEBUG", ["library info", "own debug"]),
        ("DEBUG", "DEBUG", ["library debug", "library info", "own debug"]),
        ("DEBUG", "INFO", ["library info"]),  # never below log_level
    ):
        with captured(log_level=own, library_log_level=library) as stream:
            logging.getLogger("slashgate.core").debug("own debug")
            logging.getLogger("slack_sdk.web").debug("library debug")
            logging.getLogger("slashgate.slack.bolt").debug("library debug")
            logging.getLogger("aiohttp.access").info("library info")
        lines = [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()]
        assert sorted(set(lines)) == said, (library, own, lines)
