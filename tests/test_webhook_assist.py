"""The API a composer uses: GET /v1/complete, POST /v1/classify, POST /v1/permissions/{id},
GET /v1/commands for one sender, GET /v1/agent.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from contract import Command
from gateway.events import MessageDelta, MessageEnd, PermissionOption, PermissionRequired
from slashgate.config import load_settings
from tests.conftest import ServerFactory
from tests.http import read_events
from tests.probe import Probe
from tests.telegram.helpers import Scripted

WAIT = 10.0

JSON_TYPE = {"Content-Type": "application/json"}


async def call(
    http: aiohttp.ClientSession, method: str, url: str, **kw: Any
) -> tuple[int, dict[str, Any]]:
    async with http.request(method, url, **kw) as resp:
        return resp.status, await resp.json()


async def test_completion_follows_each_conversations_own_commands(
    gateway_server: ServerFactory,
) -> None:
    # The embedded demo entity.
    async with gateway_server() as server, aiohttp.ClientSession() as http:
        url = f"{server.url}/v1/complete"
        status, body = await call(
            http, "POST", f"{server.url}/v1/messages",
            json={"conversation": "c1", "user": "u", "text": "/remember greet Hello!"},
        )  # fmt: skip
        assert body["reply"]["text"] == "Remembered /greet."

        status, mine = await call(http, "GET", url, params={"conversation": "c1", "text": "/gr"})
        assert status == 200
        assert mine["conversation"] == "c1" and mine["context"] == "command"
        assert [(i["name"], i["source"]) for i in mine["items"]] == [("greet", "dynamic")]
        _, other = await call(http, "GET", url, params={"conversation": "c2", "text": "/gr"})
        assert other["context"] == "none" and other["items"] == []

        _, menu = await call(http, "GET", url, params={"text": "/", "cursor": "1"})
        assert menu["conversation"] is None
        assert [i["name"] for i in menu["items"]][:5] == ["help", "new", "cancel", "status", "echo"]
        assert menu["items"][-1] == {
            "kind": "command", "name": "themes", "insert": "/themes ",
            "description": "Only runs in the interactive TUI", "hint": None, "arguments": None,
            "source": None, "interactive_only": True, "match": "prefix",
        }  # fmt: skip

        _, args = await call(http, "GET", url, params={"conversation": "c1", "text": "/echo "})
        assert args["context"] == "arguments" and args["command"]["hint"] == "<text>"


async def test_classify_previews_what_messages_would_do_without_running_it(
    gateway_server: ServerFactory,
) -> None:
    probe = Probe()
    texts = ["/fail boom", "/nope", "/help", "look at @file:a.py", "/settings", "/ x"]
    async with gateway_server(probe.runtime()) as server, aiohttp.ClientSession() as http:
        previews = []
        for text in texts:
            status, body = await call(
                http, "POST", f"{server.url}/v1/classify", json={"conversation": "c", "text": text}
            )
            assert status == 200
            previews.append(body)
        assert probe.seen == []  # nothing ran

        for text, preview in zip(texts, previews, strict=True):
            _, sent = await call(
                http, "POST", f"{server.url}/v1/messages",
                json={"conversation": "c", "user": "u", "text": text},
            )  # fmt: skip
            detail = preview["classification"]
            assert {k: detail[k] for k in ("kind", "command", "args")} == sent["classification"]
            assert preview["forwarded"] == sent["forwarded"], text
            rejected = sent["reply"]["category"] in ("invalid", "unsupported", "interactive_only")
            assert preview["rejection"] == (sent["reply"] if rejected else None), text
        assert probe.seen == ["/fail boom", "look at @file:a.py"]

    nope, files = previews[1], previews[3]
    assert nope["classification"] == {
        "kind": "unsupported", "command": None, "args": "", "typed": "nope", "source": None,
        "for_other_bot": False,
    }  # fmt: skip
    assert files["payload"]["nodes"][1] == {
        "kind": "file", "start": 8, "end": 18, "raw": "@file:a.py", "path": "a.py"
    }  # fmt: skip
    assert previews[2]["classification"]["source"] == "gateway"
    assert previews[2]["forwarded"] is None and previews[2]["rejection"] is None


async def test_a_webhook_client_answers_a_permission_request(gateway_server: ServerFactory) -> None:
    runtime = Scripted(Command(name="clean", description="Clean"))
    request = PermissionRequired("req-1", "Delete build/?", (PermissionOption("ok", "Allow"),))
    async with gateway_server(runtime) as server, aiohttp.ClientSession() as http:
        body = {"conversation": "c1", "user": "u", "text": "/clean"}
        headers = {"Accept": "text/event-stream"}
        async with http.post(f"{server.url}/v1/messages", json=body, headers=headers) as resp:
            events = read_events(resp)
            turn = await runtime.next_turn()
            turn.emit(request)
            kinds = [await asyncio.wait_for(anext(events), WAIT) for _ in range(2)]
            assert [k for k, _ in kinds] == ["accepted", "permission"]
            assert kinds[1][1]["request_id"] == "req-1"

            url = f"{server.url}/v1/permissions/req-1"
            status, wrong = await call(
                http, "POST", url, json={"conversation": "c2", "option": "ok"}
            )
            assert status == 404 and wrong["error"]["code"] == "not_pending"
            status, answered = await call(
                http, "POST", url, json={"conversation": "c1", "option": "ok"}
            )
            assert (status, answered) == (
                200,
                {"conversation": "c1", "request_id": "req-1", "option": "ok", "answered": True},
            )
            assert await asyncio.wait_for(turn.answers["req-1"], WAIT) == "ok"
            status, again = await call(
                http, "POST", url, json={"conversation": "c1", "option": "ok"}
            )
            assert (status, again["error"]["code"]) == (404, "not_pending")  # answered once

            turn.emit(MessageDelta("cleaned"), MessageEnd())
            rest = [item async for item in events]
        assert rest[-1][1]["reply"]["text"] == "cleaned"


@pytest.mark.parametrize(
    ("method", "path", "kw", "message"),
    [
        ("GET", "/v1/complete", {"params": {"cursor": "x"}}, "cursor: Input should be"),
        ("GET", "/v1/complete", {"params": {"text": "ab", "cursor": "3"}}, "outside the text"),
        ("GET", "/v1/complete", {"params": {"cursor": "-1"}}, "cursor: Input should be"),
        ("GET", "/v1/complete", {"params": {"limit": "0"}}, "limit: Input should be"),
        ("GET", "/v1/complete", {"params": {"conversation": "c" * 300}}, "conversation:"),
        ("GET", "/v1/commands", {"params": {"user": "u" * 300}}, "user: String should have"),
        ("POST", "/v1/classify", {"data": b"{nope", "headers": JSON_TYPE}, "not valid JSON"),
        ("POST", "/v1/classify", {"json": ["c", "/x"]}, "must be a JSON object"),
        ("POST", "/v1/classify", {"json": {"conversation": "c"}}, "text: Field required"),
        ("POST", "/v1/classify", {"json": {"conversation": "c", "text": 5}}, "text: Input should"),
        ("POST", "/v1/permissions/r", {"json": {"conversation": "c"}}, "option: Field required"),
        ("POST", "/v1/permissions/r", {"json": {"conversation": "c", "option": 1}}, "option"),
    ],
)
async def test_bad_input_is_a_json_400(
    gateway_server: ServerFactory,
    method: str,
    path: str,
    kw: dict[str, Any],
    message: str,
) -> None:
    async with gateway_server() as server, aiohttp.ClientSession() as http:
        status, body = await call(http, method, server.url + path, **kw)
    assert status == 400
    assert body["error"]["code"] in ("invalid_request", "malformed_json")
    assert message in body["error"]["message"]


async def test_the_bearer_token_guards_every_route(gateway_server: ServerFactory) -> None:
    routes: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/v1/complete?text=/e", {}),
        ("GET", "/v1/commands?conversation=c&user=u", {}),
        ("GET", "/v1/agent", {}),
        ("POST", "/v1/classify", {"json": {"conversation": "c", "text": "/echo"}}),
        ("POST", "/v1/permissions/r", {"json": {"conversation": "c", "option": None}}),
    ]
    async with (
        gateway_server(webhook_token=SecretStr("s3cret")) as server,
        aiohttp.ClientSession() as http,
    ):
        for method, path, kw in routes:
            for auth in (None, "Bearer wrong"):
                headers = {"Authorization": auth} if auth else {}
                status, body = await call(http, method, server.url + path, headers=headers, **kw)
                assert (status, body["error"]["code"]) == (401, "unauthorized"), path
            good = {"Authorization": "Bearer s3cret"}
            status, _ = await call(http, method, server.url + path, headers=good, **kw)
            assert status == (404 if "permissions" in path else 200), path
        async with http.get(f"{server.url}/chat") as resp:  # the page itself holds no secret
            assert resp.status == 200


async def test_the_page_is_on_by_default_and_can_be_turned_off(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLASHGATE_WEBCHAT", "false")
    assert load_settings().webchat is False
    for enabled in (True, False):
        async with gateway_server(webchat=enabled) as server, aiohttp.ClientSession() as http:
            async with http.get(f"{server.url}/", allow_redirects=False) as resp:
                assert (resp.status, resp.headers.get("Location")) == (
                    (302, "/chat") if enabled else (404, None)
                )
            for path in ("/chat", "/chat/static/chat.js", "/chat/static/chat.css"):
                async with http.get(server.url + path) as resp:
                    assert resp.status == (200 if enabled else 404), path
                    if enabled:
                        assert "script-src 'self'" in resp.headers["Content-Security-Policy"]
                        etag = resp.headers["ETag"]
                        async with http.get(
                            server.url + path, headers={"If-None-Match": etag}
                        ) as again:
                            assert again.status == 304
            async with http.get(f"{server.url}/chat/static/index.html") as resp:
                assert resp.status == 404  # the page has one address
            status, _ = await call(http, "GET", f"{server.url}/v1/complete?text=/")
            assert status == 200  # the API stays


async def test_the_commands_for_one_sender_are_those_help_lists_to_them(
    gateway_server: ServerFactory,
) -> None:
    """Owner-only commands (here /quickstart, and /new where the chat is not direct) are not
    offered to someone else: not in /help, not in the web chat's suggestions.
    """
    owners = {"webhook_owners": ["ada"], "webhook_owner_commands": ["quick*"]}
    async with gateway_server(**owners) as server, aiohttp.ClientSession() as http:

        async def offered(user: str | None) -> list[str]:
            params = {"conversation": "c1", **({"user": user} if user else {})}
            status, body = await call(http, "GET", f"{server.url}/v1/commands", params=params)
            assert status == 200
            return [c["name"] for c in body["commands"]]

        async def helped(user: str) -> list[str]:
            message = {"conversation": "c1", "user": user, "text": "/help"}
            _, body = await call(http, "POST", f"{server.url}/v1/messages", json=message)
            return re.findall(r"^- `/([^` ]+)", body["reply"]["text"], re.MULTILINE)

        everything = await offered(None)
        assert {"new", "quickstart"} <= set(everything)
        assert await offered("ada") == everything == await helped("ada")
        guest = await offered("guest")
        assert guest == [c for c in everything if c not in ("new", "quickstart")]
        assert guest == await helped("guest")


async def test_the_agent_is_named_for_a_greeting(gateway_server: ServerFactory) -> None:
    async with gateway_server() as server, aiohttp.ClientSession() as http:
        status, body = await call(http, "GET", f"{server.url}/v1/agent")
    assert status == 200
    assert body == {
        "name": "demo",
        "runtime": "embedded",
        "version": None,
        "description": "The demo entity: echo, slow, remember, forget, quickstart",
    }
