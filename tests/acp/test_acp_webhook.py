"""What a turn does, on the webhook: SSE events for tools, plans, reasoning, usage and
permissions, and a client answering a permission with ``POST /v1/permissions/{id}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr

from slashgate.registry import build_runtime
from tests.acp.test_acp_runtime import acp_settings
from tests.http import read_events

SSE = {"Accept": "text/event-stream"}


async def test_a_webhook_client_answers_a_permission(tmp_path: Path, gateway_server: Any) -> None:
    settings = acp_settings(tmp_path)
    async with gateway_server(build_runtime(settings)) as server, aiohttp.ClientSession() as http:
        body = {"conversation": "w1", "user": "bob", "text": "tool"}
        seen: list[tuple[str, Any]] = []
        async with http.post(f"{server.url}/v1/messages", json=body, headers=SSE) as response:
            async for event, data in read_events(response):
                seen.append((event, data))
                if event == "permission":
                    url = f"{server.url}/v1/permissions/{data['request_id']}"
                    # Not one of the options: 400, and the request stays pending.
                    wrong = {"conversation": "w1", "option": "maybe"}
                    async with http.post(url, json=wrong) as bad:
                        assert bad.status == 400
                        assert "allow, reject" in (await bad.json())["error"]["message"]
                    answer = {"conversation": "w1", "option": "allow"}
                    async with http.post(url, json=answer) as answered:
                        assert answered.status == 200
                        assert (await answered.json())["answered"] is True
                    async with http.post(url, json=answer) as again:  # answered already
                        assert again.status == 404
                        assert (await again.json())["error"]["code"] == "not_pending"
        names = [event for event, _ in seen]
        assert names[:4] == ["accepted", "tool", "permission", "status"]
        permission = seen[2][1]
        assert permission["title"] == "Delete build/"
        assert [o["option_id"] for o in permission["options"]] == ["allow", "reject"]
        assert seen[3][1] == {"status": "waiting_for_permission", "detail": "Delete build/"}
        tools = [data for event, data in seen if event == "tool"]
        assert [(t["phase"], t["tool_id"]) for t in tools] == [
            ("start", "call-1"),
            ("running", "call-1"),
            ("end", "call-1"),
        ]
        assert tools[2]["output"] == "deleted 3 files"
        assert seen[-1][0] == "reply" and seen[-1][1]["reply"]["text"] == "tool ran"


async def test_tool_plan_reasoning_and_usage_events(tmp_path: Path, gateway_server: Any) -> None:
    settings = acp_settings(tmp_path)
    async with gateway_server(build_runtime(settings)) as server, aiohttp.ClientSession() as http:
        body = {"conversation": "w2", "user": "bob", "text": "work"}
        async with http.post(f"{server.url}/v1/messages", json=body, headers=SSE) as response:
            seen = [item async for item in read_events(response)]
        events = [event for event, _ in seen]
        assert events == [
            "accepted",
            "reasoning",
            "reasoning",
            "plan",
            "tool",
            "tool",
            "tool",
            "plan",
            "tool",
            "tool",
            "usage",
            "delta",
            "usage",
            "reply",
        ]
        first_plan = seen[3][1]
        assert first_plan == {
            "entries": [
                {"content": "Read the code", "status": "pending", "priority": "medium"},
                {"content": "Run the tests", "status": "pending", "priority": "medium"},
            ],
            "text": None,
        }
        assert seen[1][1] == {"text": "The user wants "}
        assert seen[4][1]["title"] == "Read app.py" and seen[4][1]["kind"] == "read"
        assert seen[10][1] == {"context_used": 1200, "context_size": 200000}
        reply = seen[-1][1]["reply"]
        assert reply["text"] == "worked"
        assert reply["usage"] == {
            "input_tokens": 1000,
            "output_tokens": 234,
            "total_tokens": 1234,
            "context_used": 1200,
            "context_size": 200000,
        }

        # Without streaming the usage is in the reply body too.
        async with http.post(f"{server.url}/v1/messages", json=body) as response:
            assert (await response.json())["reply"]["usage"]["total_tokens"] == 1234


async def test_reasoning_off_by_config(tmp_path: Path, gateway_server: Any) -> None:
    settings = acp_settings(tmp_path)
    runtime = build_runtime(settings)
    async with (
        gateway_server(runtime, show_reasoning="off") as server,
        aiohttp.ClientSession() as http,
    ):
        body = {"conversation": "w3", "user": "bob", "text": "work"}
        async with http.post(f"{server.url}/v1/messages", json=body, headers=SSE) as response:
            events = [event async for event, _ in read_events(response)]
        assert "reasoning" not in events and "plan" in events


async def test_permission_answers_that_are_refused(tmp_path: Path, gateway_server: Any) -> None:
    settings = acp_settings(tmp_path)
    runtime = build_runtime(settings)
    async with (
        gateway_server(runtime, webhook_token=SecretStr("s3cret")) as server,
        aiohttp.ClientSession() as http,
    ):
        url = f"{server.url}/v1/permissions/nope"
        auth = {"Authorization": "Bearer s3cret"}
        async with http.post(url, json={"conversation": "w4", "option": "allow"}) as response:
            assert response.status == 401
        cases: list[tuple[Any, int]] = [
            ({"conversation": "w4", "option": "allow"}, 404),  # nothing pending
            ({"conversation": "w4", "option": None}, 404),
            ({"conversation": "w4"}, 400),  # no option
            ({"option": "allow"}, 400),
            ({"conversation": 4, "option": "allow"}, 400),
            (["not", "an", "object"], 400),
        ]
        for body, status in cases:
            async with http.post(url, json=body, headers=auth) as response:
                assert response.status == status, body
                assert "error" in await response.json()
        json_type = {**auth, "Content-Type": "application/json"}
        async with http.post(url, data=b"{not json", headers=json_type) as response:
            assert response.status == 400
            assert (await response.json())["error"]["code"] == "malformed_json"


async def test_cancelling_a_permission_with_null(tmp_path: Path, gateway_server: Any) -> None:
    settings = acp_settings(tmp_path)
    async with gateway_server(build_runtime(settings)) as server, aiohttp.ClientSession() as http:
        body = {"conversation": "w5", "user": "bob", "text": "tool"}
        reply: dict[str, Any] = {}
        async with http.post(f"{server.url}/v1/messages", json=body, headers=SSE) as response:
            async for event, data in read_events(response):
                if event == "permission":
                    url = f"{server.url}/v1/permissions/{data['request_id']}"
                    answer = {"conversation": "w5", "option": None}
                    async with http.post(url, json=answer) as answered:
                        assert answered.status == 200
                elif event == "reply":
                    reply = data["reply"]
        assert reply["stop_reason"] == "cancelled"
