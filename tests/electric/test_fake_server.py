"""The fake server answers as the Electric Agents server does: checked here with plain HTTP, so
that the runtime's tests rest on a server that refuses what the real one refuses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from .conftest import ENTITY_TYPE, STATIC_COMMANDS
from .fake_server import FakeElectric, format_offset

ENTITY = f"/_electric/entities/{ENTITY_TYPE}/e1"
USER = {"Electric-Principal": "user:alice"}


@pytest.fixture
async def http(fake: FakeElectric) -> AsyncIterator[aiohttp.ClientSession]:
    fake.grant_type(ENTITY_TYPE, "user:alice")  # USER may spawn the type
    async with aiohttp.ClientSession(base_url=fake.url) as session:
        yield session


async def _call(
    http: aiohttp.ClientSession,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    async with http.request(method, path, json=body, headers=headers) as response:
        text = await response.text()
        return response.status, json.loads(
            text
        ) if text and "json" in response.content_type else text


async def _spawn(http: aiohttp.ClientSession) -> dict[str, Any]:
    status, body = await _call(http, "PUT", ENTITY, {}, USER)
    assert status == 201
    return body  # type: ignore[no-any-return]


def _send(source: str, nodes: list[dict[str, Any]] | None) -> dict[str, Any]:
    payload: dict[str, Any] = {"source": source}
    if nodes is not None:
        payload["nodes"] = nodes
    return {"type": "composer_input", "payload": payload}


async def test_spawn_then_duplicate(http: aiohttp.ClientSession):
    body = await _spawn(http)
    assert body["url"] == f"/{ENTITY_TYPE}/e1"
    assert body["streams"] == {"main": f"/{ENTITY_TYPE}/e1/main"}
    status, again = await _call(http, "PUT", ENTITY, {})
    assert status == 409
    assert again == {
        "error": {
            "code": "DUPLICATE_URL",
            "message": f'Entity already exists at URL "/{ENTITY_TYPE}/e1"',
        }
    }


async def test_a_named_principal_needs_spawn_on_the_type_to_read_or_spawn_it(
    http: aiohttp.ClientSession,
):
    bob = {"Electric-Principal": "user:bob"}
    refused = {
        "error": {"code": "UNAUTHORIZED", "message": "Principal is not allowed to spawn assistant"}
    }
    assert await _call(http, "GET", f"/_electric/entity-types/{ENTITY_TYPE}", None, bob) == (
        401,
        refused,
    )
    assert await _call(http, "PUT", ENTITY, {}, bob) == (401, refused)
    status, _ = await _call(http, "GET", f"/_electric/entity-types/{ENTITY_TYPE}")
    assert status == 200  # no principal: a development server's system:dev-local


async def test_registering_a_type_again_replaces_its_commands_not_its_entities_rows(
    http: aiohttp.ClientSession, fake: FakeElectric
):
    await _spawn(http)
    summarize = {"name": "summarize", "description": "Summarize the conversation"}
    declaration = {
        "name": ENTITY_TYPE,
        "description": "test agent",
        "slash_commands": [*STATIC_COMMANDS, summarize],
    }
    status, body = await _call(
        http, "POST", "/_electric/entity-types", declaration, {"Electric-Principal": "user:bob"}
    )
    assert (status, body["error"]["message"]) == (
        401,
        "Principal is not allowed to manage assistant",
    )
    status, body = await _call(http, "POST", "/_electric/entity-types", declaration)
    assert (status, body["revision"], body["slash_commands"][-1]) == (201, 2, summarize)
    status, body = await _call(http, "GET", f"/_electric/entity-types/{ENTITY_TYPE}")
    assert [c["name"] for c in body["slash_commands"]] == ["deploy", "pr-review", "summarize"]
    (entity,) = fake.entities.values()
    rows = [e["key"] for e in entity.stream.events if e["type"] == "slash_command"]
    assert rows == ["deploy", "pr-review"]  # an entity's stream keeps what it was created with


async def test_unknown_type_and_entity(http: aiohttp.ClientSession):
    assert await _call(http, "PUT", "/_electric/entities/ghost/e1", {}) == (
        404,
        {"error": {"code": "UNKNOWN_ENTITY_TYPE", "message": 'Entity type "ghost" not found'}},
    )
    status, body = await _call(http, "POST", f"{ENTITY}/send", _send("hi", None))
    assert (status, body["error"]["code"]) == (404, "NOT_FOUND")
    status, body = await _call(http, "GET", "/_electric/entity-types/ghost")
    assert (status, body["error"]["code"]) == (404, "NOT_FOUND")


async def test_entity_type_carries_its_static_commands(http: aiohttp.ClientSession):
    status, body = await _call(http, "GET", f"/_electric/entity-types/{ENTITY_TYPE}")
    assert status == 200 and body["slash_commands"] == STATIC_COMMANDS


async def test_send_accepts_emoji_spans(http: aiohttp.ClientSession):
    await _spawn(http)
    source = "😀 /deploy 🚀"
    nodes = [
        {"kind": "text", "start": 0, "end": 3, "raw": "😀 "},
        {"kind": "slash_command", "start": 3, "end": 10, "raw": "/deploy", "name": "deploy"},
        {"kind": "text", "start": 10, "end": 13, "raw": " 🚀"},
    ]
    status, body = await _call(http, "POST", f"{ENTITY}/send", _send(source, nodes), USER)
    assert status == 200 and set(body) == {"txid"}


BAD_PAYLOADS: list[tuple[str, Any, dict[str, str]]] = [
    ("not an object", "hello", {"path": "/", "message": "must be an object"}),
    ("source not a string", {"source": 3}, {"path": "/source", "message": "must be a string"}),
    (
        "nodes not an array",
        {"source": "a", "nodes": {}},
        {"path": "/nodes", "message": "must be an array"},
    ),
    (
        "nodes null",
        {"source": "a", "nodes": None},
        {"path": "/nodes", "message": "must be an array"},
    ),
    (
        "node not an object",
        {"source": "a", "nodes": ["a"]},
        {"path": "/nodes/0", "message": "must be an object"},
    ),
    (
        "start not an integer",
        {"source": "ab", "nodes": [{"kind": "text", "start": 0.5, "end": 1, "raw": "a"}]},
        {"path": "/nodes/0/start", "message": "must be an integer"},
    ),
    (
        "end past the source in UTF-16",
        {"source": "😀", "nodes": [{"kind": "text", "start": 0, "end": 3, "raw": "😀"}]},
        {"path": "/nodes/0/end", "message": "must be within source"},
    ),
    (
        "start after end",
        {"source": "ab", "nodes": [{"kind": "text", "start": 2, "end": 1, "raw": ""}]},
        {"path": "/nodes/0/end", "message": "must be >= start"},
    ),
    (
        "negative start",
        {"source": "ab", "nodes": [{"kind": "text", "start": -1, "end": 1, "raw": "a"}]},
        {"path": "/nodes/0/start", "message": "must be >= 0"},
    ),
    (
        "raw is not the slice",
        {"source": "ab", "nodes": [{"kind": "text", "start": 0, "end": 1, "raw": "b"}]},
        {"path": "/nodes/0/raw", "message": "must equal source.slice(start, end)"},
    ),
    (
        "overlapping nodes",
        {
            "source": "ab",
            "nodes": [
                {"kind": "text", "start": 0, "end": 2, "raw": "ab"},
                {"kind": "text", "start": 1, "end": 2, "raw": "b"},
            ],
        },
        {"path": "/nodes/1/start", "message": "must not overlap the previous node"},
    ),
    (
        "command name not kebab-case",
        {
            "source": "/Deploy",
            "nodes": [
                {"kind": "slash_command", "start": 0, "end": 7, "raw": "/Deploy", "name": "Deploy"}
            ],
        },
        {"path": "/nodes/0/name", "message": "must be a lowercase kebab-case command name"},
    ),
    (
        "command name with a colon",
        {
            "source": "/skill:x",
            "nodes": [
                {
                    "kind": "slash_command",
                    "start": 0,
                    "end": 8,
                    "raw": "/skill:x",
                    "name": "skill:x",
                }
            ],
        },
        {"path": "/nodes/0/name", "message": "must be a lowercase kebab-case command name"},
    ),
    (
        "empty file path",
        {
            "source": "@file:",
            "nodes": [{"kind": "file", "start": 0, "end": 6, "raw": "@file:", "path": ""}],
        },
        {"path": "/nodes/0/path", "message": "must be a string"},
    ),
    (
        "empty symbol name",
        {
            "source": "s",
            "nodes": [{"kind": "symbol", "start": 0, "end": 1, "raw": "s", "name": ""}],
        },
        {"path": "/nodes/0/name", "message": "must be a non-empty string"},
    ),
    (
        "branch without a name",
        {"source": "b", "nodes": [{"kind": "branch", "start": 0, "end": 1, "raw": "b"}]},
        {"path": "/nodes/0/name", "message": "must be a non-empty string"},
    ),
    (
        "empty kind",
        {"source": "b", "nodes": [{"kind": "", "start": 0, "end": 1, "raw": "b"}]},
        {"path": "/nodes/0/kind", "message": "must be a non-empty string"},
    ),
]


@pytest.mark.parametrize(
    ("payload", "detail"),
    [(p, d) for _, p, d in BAD_PAYLOADS],
    ids=[name for name, _, _ in BAD_PAYLOADS],
)
async def test_composer_input_422_rules(
    http: aiohttp.ClientSession, payload: Any, detail: dict[str, str]
):
    await _spawn(http)
    body = {"type": "composer_input", "payload": payload}
    status, answer = await _call(http, "POST", f"{ENTITY}/send", body, USER)
    assert status == 422
    assert answer["error"]["code"] == "SCHEMA_VALIDATION_FAILED"
    assert answer["error"]["message"] == "Validation failed"
    assert detail in answer["error"]["details"]


async def test_unknown_node_kinds_pass_as_the_server_lets_them(http: aiohttp.ClientSession):
    await _spawn(http)
    nodes = [{"kind": "mention", "start": 0, "end": 4, "raw": "@bob", "user": "bob"}]
    status, _ = await _call(http, "POST", f"{ENTITY}/send", _send("@bob", nodes), USER)
    assert status == 200


async def test_send_refusals_in_the_server_order(fake: FakeElectric, http: aiohttp.ClientSession):
    await _spawn(http)
    send = f"{ENTITY}/send"
    status, body = await _call(http, "POST", send, {"mode": "later", "payload": 1}, USER)
    assert (status, body["error"]["message"]) == (400, "Request body does not match API schema")
    status, body = await _call(http, "POST", send, {**_send("a", None), "from": "user:alice"}, USER)
    assert (status, body["error"]["message"]) == (400, "Request from must match Electric-Principal")
    status, body = await _call(http, "POST", send, {"type": "composer_input"}, USER)
    assert (status, body["error"]["code"]) == (422, "SCHEMA_VALIDATION_FAILED")  # checked first
    status, body = await _call(http, "POST", send, {"mode": "queued"}, USER)
    assert (status, body["error"]["message"]) == (400, "Missing required field: payload")
    fake.add_type("typed", [], None, inbox_schemas={"note": {}})
    await _call(http, "PUT", "/_electric/entities/typed/t1", {})
    status, body = await _call(
        http, "POST", "/_electric/entities/typed/t1/send", {"type": "other", "payload": {}}
    )
    assert (status, body["error"]["code"]) == (422, "UNKNOWN_MESSAGE_TYPE")
    fake.stop_entity(f"/{ENTITY_TYPE}/e1")
    status, body = await _call(http, "POST", send, _send("a", None), USER)
    assert (status, body["error"]["code"]) == (409, "NOT_RUNNING")


async def test_only_the_creator_and_grantees_may_write(
    http: aiohttp.ClientSession, fake: FakeElectric
):
    fake.grant_type(ENTITY_TYPE, "service:gw")
    await _call(http, "PUT", ENTITY, {}, {"Electric-Principal": "service:gw"})
    status, body = await _call(http, "POST", f"{ENTITY}/send", _send("a", None), USER)
    assert (status, body["error"]["code"]) == (401, "UNAUTHORIZED")
    grants = {
        "grants": [
            {"subject_kind": "principal_kind", "subject_value": "user", "permission": "write"}
        ]
    }
    await _call(http, "PUT", f"{ENTITY}x", grants, {"Electric-Principal": "service:gw"})
    status, _ = await _call(http, "POST", f"{ENTITY}x/send", _send("a", None), USER)
    assert status == 200


async def test_catch_up_long_poll_and_sse(fake: FakeElectric, http: aiohttp.ClientSession):
    entity = await _spawn(http)
    stream = entity["streams"]["main"]
    async with http.get(stream, params={"offset": "-1"}) as response:
        events = await response.json()
        tail = response.headers["Stream-Next-Offset"]
        assert response.headers["Stream-Up-To-Date"] == "true"
    assert [e["type"] for e in events] == ["entity_created", "slash_command", "slash_command"]
    assert tail == format_offset(3)

    async with http.get(stream, params={"offset": tail, "live": "long-poll"}) as response:
        assert response.status == 204 and response.headers["Stream-Next-Offset"] == tail

    async with http.get(stream, params={"offset": format_offset(1), "live": "sse"}) as response:
        assert response.content_type == "text/event-stream"
        first = (await response.content.readuntil(b"\n\n")).decode()
        second = (await response.content.readuntil(b"\n\n")).decode()
    assert first.startswith("event: data\ndata:[")
    assert json.loads(first.split("data:", 1)[1])[0]["key"] == "deploy"
    assert second.startswith("event: control\n")
    assert json.loads(second.split("data:", 1)[1])["streamNextOffset"] == tail

    for params, text in [
        ({"offset": "x"}, "malformed offset"),
        ({"live": "sse"}, "offset is required for live modes"),
        ({"offset": "-1", "live": "poll"}, "invalid live mode"),
    ]:
        assert await _call(http, "GET", f"{stream}?{_query(params)}") == (400, text)


async def test_sse_is_ended_by_the_server(fake: FakeElectric, http: aiohttp.ClientSession):
    fake.sse_max_duration = 0.01
    stream = (await _spawn(http))["streams"]["main"]
    async with http.get(stream, params={"offset": format_offset(3), "live": "sse"}) as response:
        body = (await response.read()).decode()
    control = json.loads(body.split("\n\n")[0].split("data:", 1)[1])
    assert body.endswith("\n\n")  # the response ended after whole events
    assert control["upToDate"] is True and control["streamNextOffset"] == format_offset(3)


def _query(params: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in params.items())
