"""End to end: ``slashgate serve`` as a subprocess, driven over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.http import Served, read_events, serve_subprocess

WAIT = 10.0


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        yield session


async def post(
    client: aiohttp.ClientSession, served: Served, text: str, conversation: str = "c1", **kw: Any
) -> tuple[int, Any]:
    body = {"conversation": conversation, "user": "u1", "text": text}
    async with client.post(f"{served.url}/v1/messages", json=body, **kw) as resp:
        return resp.status, await resp.json()


def stream(client: aiohttp.ClientSession, served: Served, text: str, **headers: str) -> Any:
    """POST a message asking for server-sent events (use as ``async with``)."""
    body = {"conversation": "c1", "user": "u1", "text": text}
    headers = {"Accept": "text/event-stream", **headers}
    return client.post(f"{served.url}/v1/messages", json=body, headers=headers)


async def test_echo_unsupported_invalid_and_health(client: aiohttp.ClientSession) -> None:
    async with serve_subprocess() as served:
        async with client.get(f"{served.url}/healthz") as resp:
            assert resp.status == 200
        status, body = await post(client, served, "/echo  hello, world ")
        assert status == 200
        assert body["classification"] == {
            "kind": "supported",
            "command": "echo",
            "args": "hello, world",
        }
        assert body["reply"]["text"] == "hello, world" and body["reply"]["category"] is None
        assert body["forwarded"] == {
            "type": "composer_input",
            "mode": "immediate",
            "payload": {
                "source": "/echo  hello, world ",
                "nodes": [
                    {"kind": "slash_command", "start": 0, "end": 5, "raw": "/echo", "name": "echo"},
                    {"kind": "text", "start": 5, "end": 20, "raw": "  hello, world "},
                ],
            },
        }
        _, body = await post(client, served, "/nope now")
        assert body["forwarded"] is None
        assert body["reply"] == {
            "text": "Unsupported slash command /nope. Send /help to list available commands.",
            "category": "unsupported",
            "stop_reason": None,
        }
        _, body = await post(client, served, "/ echo")
        assert body["classification"]["kind"] == "invalid"
        assert body["reply"]["text"] == "Invalid slash command. Enter a command name after /."
        _, body = await post(client, served, "/settings")
        assert body["reply"]["category"] == "interactive_only"
        _, body = await post(client, served, "thanks 👍")
        assert body["reply"]["text"] == 'You said: "thanks 👍"'


async def test_busy_then_cancel_over_sse(client: aiohttp.ClientSession) -> None:
    async with serve_subprocess() as served:
        async with stream(client, served, "/slow 60") as resp:
            events = read_events(resp)
            kind, data = await asyncio.wait_for(anext(events), WAIT)
            assert kind == "accepted" and data["classification"]["command"] == "slow"

            _, busy = await post(client, served, "/echo hi")
            assert busy["reply"] == {
                "text": "Slash command /echo could not run because the session is busy. "
                "Retry in a moment.",
                "category": "busy",
                "stop_reason": None,
            }
            _, status = await post(client, served, "/status")
            assert "running `/slow`" in status["reply"]["text"]
            _, cancel = await post(client, served, "/cancel")
            assert cancel["reply"]["text"] == "Cancelled the running turn."
            rest = [item async for item in events]
        assert rest[-1][0] == "reply"
        assert rest[-1][1]["reply"]["stop_reason"] == "cancelled"
        _, after = await post(client, served, "/echo free again")
        assert after["reply"]["text"] == "free again"


async def test_deadline_gives_the_timeout_text(client: aiohttp.ClientSession) -> None:
    async with serve_subprocess(run_timeout="1") as served:
        _, body = await post(client, served, "/slow 60")
        assert body["reply"] == {
            "text": "Slash command /slow timed out. Retry in a moment.",
            "category": "timeout",
            "stop_reason": None,
        }
        _, after = await post(client, served, "/echo next")
        assert after["reply"]["text"] == "next"


async def test_dynamic_register_and_unregister(client: aiohttp.ClientSession) -> None:
    async def names(conversation: str) -> list[tuple[str, str]]:
        url = f"{served.url}/v1/commands?conversation={conversation}"
        async with client.get(url) as resp:
            data = await resp.json()
        assert data["interactive_only"] == ["hotkeys", "settings", "theme", "themes"]
        return [(c["name"], c["source"]) for c in data["commands"]]

    async with serve_subprocess() as served:
        assert ("greet", "dynamic") not in await names("c1")
        _, body = await post(client, served, "/remember greet Hello, friend!")
        assert body["reply"]["text"] == "Remembered /greet."
        listed = await names("c1")
        assert listed[:4] == [
            ("help", "gateway"),
            ("new", "gateway"),
            ("cancel", "gateway"),
            ("status", "gateway"),
        ]
        assert ("echo", "static") in listed and ("greet", "dynamic") in listed
        _, body = await post(client, served, "/GREET")
        assert body["reply"]["text"] == "Hello, friend!"
        _, body = await post(client, served, "/greet", conversation="elsewhere")
        assert body["reply"]["category"] == "unsupported", "inventories are per conversation"
        _, body = await post(client, served, "/forget greet")
        assert body["reply"]["text"] == "Forgot /greet."
        assert ("greet", "dynamic") not in await names("c1")
        _, body = await post(client, served, "/greet")
        assert body["reply"]["category"] == "unsupported"


async def test_sse_streams_deltas_then_the_reply(client: aiohttp.ClientSession) -> None:
    async with serve_subprocess() as served:
        async with stream(client, served, "/slow 2") as resp:
            assert resp.headers["Content-Type"].startswith("text/event-stream")
            events = [item async for item in read_events(resp)]
        assert [kind for kind, _ in events] == ["accepted", "delta", "delta", "delta", "reply"]
        assert [data["text"] for kind, data in events if kind == "delta"] == [
            "1/2\n",
            "2/2\n",
            "done",
        ]
        assert events[-1][1]["reply"]["text"] == "1/2\n2/2\ndone"
        async with stream(client, served, "/nope") as resp:
            events = [item async for item in read_events(resp)]
        assert [kind for kind, _ in events] == ["accepted", "reply"]
        assert events[0][1]["forwarded"] is None
        assert events[1][1]["reply"]["category"] == "unsupported"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def limited() -> AsyncIterator[Served]:
    """One server for all the bad requests: each case then also shows that the ones before it
    left the server answering (a fresh start per case cost a second of CPU each).
    """
    async with serve_subprocess(webhook_max_body="1024") as served:
        yield served


@pytest.mark.parametrize(
    ("method", "path", "data", "status", "code", "needle"),
    [
        ("POST", "/v1/messages", b"{not json", 400, "malformed_json", "not valid JSON"),
        ("POST", "/v1/messages", b"[1, 2]", 400, "invalid_request", "JSON object"),
        (
            "POST",
            "/v1/messages",
            b'{"conversation": "c", "user": "u"}',
            400,
            "invalid_request",
            "text",
        ),
        (
            "POST",
            "/v1/messages",
            b'{"conversation": 7, "user": "u", "text": "x"}',
            400,
            "invalid_request",
            "conversation",
        ),
        (
            "POST",
            "/v1/messages",
            b'{"conversation": "c", "user": "u", "text": ""}',
            400,
            "invalid_request",
            "text",
        ),
        ("POST", "/v1/messages", b"\xff\xfe", 400, "malformed_json", "not valid JSON"),
        ("POST", "/v1/messages", b"[" * 1000, 400, "malformed_json", "nested too deeply"),
        ("POST", "/v1/messages", b'{"text": "' + b"x" * 2000 + b'"}', 413, "too_large", "1024"),
        ("GET", "/v1/messages", None, 405, "method_not_allowed", "Method Not Allowed"),
        ("GET", "/v1/nothing", None, 404, "not_found", "Not Found"),
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_bad_input_is_a_clear_4xx(
    limited: Served,
    method: str,
    path: str,
    data: bytes | None,
    status: int,
    code: str,
    needle: str,
) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as client:
        headers = {"Content-Type": "application/json"} if data is not None else {}
        url = limited.url + path
        async with client.request(method, url, data=data, headers=headers) as resp:
            body = await resp.json()
            assert resp.status == status
        assert body["error"]["code"] == code and needle in body["error"]["message"]
        _, ok = await post(client, limited, "/echo still fine")
        assert ok["reply"]["text"] == "still fine"


async def test_bearer_token_is_required_when_configured(client: aiohttp.ClientSession) -> None:
    token = "s3cret-token-value"
    async with serve_subprocess(webhook_token=token, log_level="DEBUG") as served:
        status, body = await post(client, served, "/echo x")
        assert status == 401 and body["error"]["code"] == "unauthorized"
        status, _ = await post(client, served, "/echo x", headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, _ = await post(client, served, "/echo x", headers={"Authorization": token})
        assert status == 401
        async with client.get(f"{served.url}/v1/commands") as resp:
            assert resp.status == 401
        status, body = await post(
            client, served, "/echo x", headers={"Authorization": f"Bearer {token}"}
        )
        assert status == 200 and body["reply"]["text"] == "x"
    assert not any(token in line for line in served.output), "the token must never be logged"


async def test_idempotency_key_replays_without_a_second_run(client: aiohttp.ClientSession) -> None:
    async with serve_subprocess() as served:
        key = {"Idempotency-Key": "req-1"}
        first = asyncio.create_task(post(client, served, "/slow 1", headers=key))
        # The same key while the first is still running waits for it; a second run would
        # have met the busy session instead.
        status, replay = await post(client, served, "/slow 1", headers=key)
        assert status == 200
        original = (await first)[1]
        assert replay == original and original["reply"]["text"] == "1/1\ndone"
        async with client.post(
            f"{served.url}/v1/messages",
            json={"conversation": "c1", "user": "u1", "text": "/slow 1"},
            headers=key,
        ) as resp:
            assert resp.headers["Idempotent-Replayed"] == "true"
            assert await resp.json() == original
        status, body = await post(client, served, "/echo other", headers=key)
        assert status == 422 and body["error"]["code"] == "idempotency_mismatch"


async def test_a_client_that_leaves_an_event_stream_does_not_break_the_turn(
    client: aiohttp.ClientSession,
) -> None:
    async with serve_subprocess() as served:
        async with stream(client, served, "/slow 2", **{"Idempotency-Key": "leaving"}) as resp:
            events = read_events(resp)
            kind, _ = await asyncio.wait_for(anext(events), WAIT)
            assert kind == "accepted"
            resp.close()  # hang up mid-stream
        # The turn finishes anyway: the same key replays its whole reply once it is done.
        status, replay = await post(
            client, served, "/slow 2", headers={"Idempotency-Key": "leaving"}
        )
        assert status == 200 and replay["reply"]["text"] == "1/2\n2/2\ndone"
        assert not any("Traceback" in line for line in served.output)
