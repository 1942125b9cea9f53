"""A local fake Electric Agents server (aiohttp, 127.0.0.1, ephemeral port).

It follows the server's source (electric-sql/electric: packages/agents-server routes,
packages/agents-runtime composer_input validation and stream rows, packages/durable-streams-rust
read modes): the routes the gateway uses, their checks in the server's order, the error bodies
``{"error": {code, message, details?}}``, and the three read modes of an entity's JSON stream.
Simplified on purpose: one tenant, no authorization hook, offsets count events instead of bytes
(they are opaque to clients), an entity type's handler is a Python coroutine run in process.
Entity-type permissions are enforced as the server does for every principal but the built-in
system ones (development mode included): reading a type and spawning one need ``spawn`` (or
``manage``) on it, registering an existing type again needs ``manage``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web

from contract import composer_input_problems

SLASH_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
PRINCIPAL_KINDS = ("user", "agent", "service", "system")
BYPASS = {
    "/principal/system%3Aframework",
    "/principal/system%3Aauth-sync",
    "/principal/system%3Adev-local",
}
MODES = ("immediate", "queued", "paused", "steer")
PERMISSIONS = ("read", "write", "delete", "signal", "fork", "schedule", "spawn", "manage")
SIGNALS = ("SIGINT", "SIGHUP", "SIGTERM", "SIGKILL", "SIGSTOP", "SIGCONT", "SIGUSR")

Handler = Callable[["EntityContext"], Awaitable[None]]


def api_error(status: int, code: str, message: str, details: Any = None) -> web.Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return web.json_response({"error": error}, status=status)


def format_offset(n: int) -> str:
    return f"{0:016d}_{n:016d}"


def parse_offset(raw: str | None, tail: int) -> int | None:
    """Event index to read from; None when malformed (the streams server answers 400)."""
    if raw is None or raw == "-1":
        return 0
    if raw == "now":
        return tail
    seq, sep, pos = raw.partition("_")
    if not sep or len(seq) != 16 or len(pos) != 16 or not (seq + pos).isdigit():
        return None
    return min(int(pos), tail)


def principal_url(key: str) -> str:
    return "/principal/" + quote(key, safe="")


def parse_principal(value: str | None) -> str | None:
    """principal.ts parsePrincipalKey: ``kind:id``, id non-empty without ``/``."""
    if not value:
        return None
    kind, sep, ident = value.partition(":")
    if not sep or kind not in PRINCIPAL_KINDS or not ident or "/" in ident:
        return None
    return principal_url(value)


# -- composer_input: validateComposerInputPayload (packages/agents-runtime) ---------------


def composer_input_details(payload: Any) -> list[dict[str, str]]:
    """The server's 422 details for a composer_input payload; empty when valid.

    ``contract.composer_input_problems`` checks the same spans, raw slices, order, names and
    values. Where the server differs it is adapted here: unknown node kinds pass (only their
    base fields are checked, as for text), ``nodes: null`` is refused, and JSON numbers such
    as ``3.0`` are integers (JavaScript's Number.isInteger).
    """
    if not isinstance(payload, dict):
        return [{"path": "/", "message": "must be an object"}]
    nodes = payload.get("nodes")
    if "nodes" in payload and nodes is None:
        return [{"path": "/nodes", "message": "must be an array"}]
    details: list[dict[str, str]] = []
    if isinstance(nodes, list):
        adapted = []
        for i, node in enumerate(nodes):
            if isinstance(node, dict):
                node = {k: _js_number(v) for k, v in node.items()}
                kind = node.get("kind")
                if not isinstance(kind, str) or not kind:
                    details.append(
                        {"path": f"/nodes/{i}/kind", "message": "must be a non-empty string"}
                    )
                    node = {**node, "kind": "text"}
                elif kind not in ("text", "slash_command", "file", "symbol", "branch"):
                    node = {**node, "kind": "text"}
            adapted.append(node)
        payload = {**payload, "nodes": adapted}
    details.extend(_server_detail(p) for p in composer_input_problems(payload, strict_names=True))
    return details


# The contract's problem texts, worded as the server words them: (pattern, field, message).
_WORDING: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"payload\.source "), "/source", "must be a string"),
    (re.compile(r"payload\.nodes "), "/nodes", "must be an array"),
    (re.compile(r"\.start and \.end "), "/start", "must be an integer"),
    (re.compile(r" span .* is outside "), "/end", "must be within source"),  # end > length
    (re.compile(r"\.raw does not equal"), "/raw", "must equal source.slice(start, end)"),
    (re.compile(r" overlaps or precedes"), "/start", "must not overlap the previous node"),
    (
        re.compile(r"\.name .* does not match"),
        "/name",
        "must be a lowercase kebab-case command name",
    ),
    (re.compile(r"\.path must be"), "/path", "must be a string"),
    (re.compile(r"\.name must be"), "/name", "must be a non-empty string"),
    (re.compile(r" must be an object"), "", "must be an object"),
)


def _server_detail(problem: str) -> dict[str, str]:
    node = re.match(r"nodes\[(\d+)\]", problem)
    base = f"/nodes/{node.group(1)}" if node else ""
    span = re.search(r"span (-?\d+)\.\.(-?\d+) is outside", problem)
    if span:  # the server tells which bound is wrong
        start, end = int(span.group(1)), int(span.group(2))
        if start < 0:
            return {"path": f"{base}/start", "message": "must be >= 0"}
        if end < start:
            return {"path": f"{base}/end", "message": "must be >= start"}
    for pattern, field_path, message in _WORDING:
        if pattern.search(problem):
            return {"path": (base + field_path) or "/", "message": message}
    return {"path": base or "/", "message": problem}


def _js_number(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


# -- TypeBox-style body checks of the routes (schema.ts: 400 "does not match API schema") -


def _type_problems(
    body: dict[str, Any], fields: dict[str, Callable[[Any], bool]]
) -> list[dict[str, str]]:
    return [
        {"path": f"/{name}", "message": "must match the API schema"}
        for name, ok in fields.items()
        if name in body and not ok(body[name])
    ]


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


def _is_grant(v: Any) -> bool:
    allowed = {
        "subject_kind",
        "subject_value",
        "permission",
        "propagation",
        "copy_to_children",
        "expires_at",
    }
    return (
        isinstance(v, dict)
        and set(v) <= allowed
        and v.get("subject_kind") in ("principal", "principal_kind")
        and isinstance(v.get("subject_value"), str)
        and v.get("permission") in PERMISSIONS
    )


SEND_FIELDS: dict[str, Callable[[Any], bool]] = {
    "key": _is_str,
    "type": _is_str,
    "mode": lambda v: v in MODES,
    "position": _is_str,
    "afterMs": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "from": _is_str,
    "from_principal": _is_str,
    "from_agent": _is_str,
}
SPAWN_FIELDS: dict[str, Callable[[Any], bool]] = {
    "args": lambda v: isinstance(v, dict),
    "tags": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "parent": _is_str,
    "grants": lambda v: isinstance(v, list) and all(_is_grant(g) for g in v),
    "initialMessageType": _is_str,
}


# -- streams ----------------------------------------------------------------------------


@dataclass
class SseConnection:
    sent: int
    closing: bool = False
    torn: bool = False  # send the next data event without its control event, then hang up
    abort: bool = False  # hang up by dropping the connection instead of ending the body
    wake: asyncio.Event = field(default_factory=asyncio.Event)


class FakeStream:
    """A JSON-mode stream: one message per event, offsets are event counts."""

    def __init__(self, path: str, server: FakeElectric) -> None:
        self.path = path
        self.server = server
        self.events: list[dict[str, Any]] = []
        self.closed = False
        self.delivered = 0  # how far any reader has been sent
        self.retained_from = 0  # a retention policy dropped the events before this one
        self.sse: list[SseConnection] = []
        self._grew = asyncio.Event()

    @property
    def tail(self) -> int:
        return len(self.events)

    def append(self, *events: dict[str, Any]) -> None:
        self.events.extend(json.loads(json.dumps(e)) for e in events)
        self._notify()

    def close(self) -> None:
        self.closed = True
        self._notify()

    def _notify(self) -> None:
        self._grew.set()
        self._grew = asyncio.Event()
        for conn in self.sse:
            conn.wake.set()
        self.server.changed()

    async def wait_beyond(self, position: int, limit: float) -> bool:
        """True when the stream has events past ``position`` (or closed) within ``limit`` s."""
        deadline = time.monotonic() + limit
        while self.tail <= position and not self.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._grew.wait(), remaining)
        return True

    def mark_delivered(self, upto: int) -> None:
        self.delivered = max(self.delivered, upto)
        self.server.changed()

    def disconnect_sse(self, *, torn: bool = False, abort: bool = False) -> list[SseConnection]:
        """Make the server end every open SSE response of this stream (the ones returned).

        ``torn``: after the next data event, before its control event. ``abort``: drop the
        connection instead of ending the response.
        """
        conns = list(self.sse)
        for conn in conns:
            if torn:
                conn.torn = True
            else:
                conn.closing = True
            conn.abort = abort
            conn.wake.set()
        self.server.sse_disconnects += len(conns)
        return conns


# -- entities ---------------------------------------------------------------------------


@dataclass
class FakeType:
    name: str
    description: str
    slash_commands: list[dict[str, Any]]
    handler: Handler | None = None
    inbox_schemas: dict[str, Any] | None = None
    revision: int = 1
    grants: list[dict[str, Any]] = field(default_factory=list)  # spawn / manage on the type

    def allows(self, principal: str, permission: str) -> bool:
        """permissions.ts canAccessEntityType: built-in system principals, then the grants."""
        return principal in BYPASS or _granted(self.grants, principal, permission)

    def body(self) -> dict[str, Any]:
        now = "2026-01-01T00:00:00.000Z"
        body: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "slash_commands": self.slash_commands,
            "revision": self.revision,
            "created_at": now,
            "updated_at": now,
        }
        if self.inbox_schemas is not None:
            body["inbox_schemas"] = self.inbox_schemas
        return body


@dataclass
class FakeEntity:
    type: FakeType
    id: str
    created_by: str
    stream: FakeStream
    grants: list[dict[str, Any]]
    tags: dict[str, str] = field(default_factory=dict)
    status: str = "idle"
    runs: int = 0
    texts: int = 0
    active_run: str | None = None
    inbox: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    handling: asyncio.Task[None] | None = None
    layers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    forking: bool = False  # a fork holds the work lock (entity-manager.ts)

    @property
    def url(self) -> str:
        return f"/{self.type.name}/{self.id}"

    def public(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "type": self.type.name,
            "status": self.status,
            "streams": {"main": self.stream.path},
            "tags": dict(self.tags),
            "created_by": self.created_by,
            "created_at": 1767225600000,
            "updated_at": 1767225600000,
        }

    def allows(self, principal: str, permission: str) -> bool:
        """permissions.ts canAccessEntity: built-in system principals, the creator, grantees."""
        if principal in BYPASS or principal == self.created_by:
            return True
        return _granted(self.grants, principal, permission)


def _granted(grants: list[dict[str, Any]], principal: str, permission: str) -> bool:
    """A grant of ``permission`` (or ``manage``) to the principal or to its kind."""
    kind = principal.removeprefix("/principal/").split("%3A", 1)[0]
    return any(
        g["permission"] in (permission, "manage")
        and (
            (g["subject_kind"] == "principal" and g["subject_value"] == principal)
            or (g["subject_kind"] == "principal_kind" and g["subject_value"] == kind)
        )
        for g in grants
    )


def change(
    kind: str, key: str, value: dict[str, Any] | None, operation: str = "insert", **headers: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": kind,
        "key": key,
        "headers": {"operation": operation, **headers},
    }
    if value is not None:
        event["value"] = value
    return event


class EntityContext:
    """What a fake type's handler gets for one inbox message: it writes stream rows the way
    the agents runtime does (outbound-bridge.ts, context-factory.ts).
    """

    def __init__(self, server: FakeElectric, entity: FakeEntity, message: dict[str, Any]) -> None:
        self.server = server
        self.entity = entity
        self.message = message
        self.last_run: str | None = None

    @property
    def payload(self) -> Any:
        return self.message.get("payload")

    @property
    def stream(self) -> FakeStream:
        return self.entity.stream

    def start_run(self) -> str:
        run = f"run-{self.entity.runs}"
        self.entity.runs += 1
        self.entity.active_run = self.last_run = run
        self.stream.append(change("run", run, {"status": "started"}))
        return run

    def end_run(self, run: str, status: str = "completed", finish_reason: str = "stop") -> None:
        if self.entity.active_run == run:
            self.entity.active_run = None
        self.stream.append(
            change("run", run, {"status": status, "finish_reason": finish_reason}, "update")
        )

    def begin_text(self, run: str) -> str:
        text = f"msg-{self.entity.texts}"
        self.entity.texts += 1
        self.stream.append(change("text", text, {"status": "streaming", "run_id": run}))
        return text

    def delta(self, run: str, text: str, seq: int, delta: str) -> None:
        self.stream.append(
            change("text_delta", f"{text}:{seq}", {"text_id": text, "run_id": run, "delta": delta})
        )

    def end_text(self, run: str, text: str) -> None:
        self.stream.append(change("text", text, {"status": "completed", "run_id": run}, "update"))

    def text(self, run: str, *chunks: str) -> None:
        """One message of the run, streamed as one text_delta per chunk."""
        text = self.begin_text(run)
        for seq, chunk in enumerate(chunks):
            self.delta(run, text, seq, chunk)
        self.end_text(run, text)

    async def reply(self, *chunks: str) -> None:
        run = self.start_run()
        self.text(run, *chunks)
        self.end_run(run)

    def error(self, code: str, message: str, run: str | None = None) -> None:
        value: dict[str, Any] = {"error_code": code, "message": message}
        key = f"error-{uuid.uuid4()}"
        if run is not None:
            value["run_id"] = run
            key = f"{run}:{key}"
        self.stream.append(change("error", key, value))

    def register(
        self,
        name: str,
        description: str | None = None,
        arguments: list[dict[str, Any]] | None = None,
        owner: str = "handler",
    ) -> None:
        self.server.register(self.entity, name, description, arguments, owner)

    def unregister(self, name: str) -> None:
        self.server.unregister(self.entity, name)

    async def sse_open(self) -> None:
        """Until a reader follows this stream over SSE."""
        await self.server.until(lambda: bool(self.stream.sse))

    async def ended(self, conns: list[SseConnection]) -> None:
        """Until the server has ended these SSE responses."""
        await self.server.until(lambda: all(c not in self.stream.sse for c in conns))

    async def delivered(self) -> None:
        """Until some reader has been sent everything written so far."""
        await self.server.until(lambda: self.stream.delivered >= self.stream.tail)


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any = None
    status: int | None = None  # the answer's, once given


class FakeElectric:
    def __init__(
        self,
        *,
        require_principal: bool = False,
        long_poll_timeout: float = 30.0,
        sse_max_duration: float = 60.0,
        sse_keepalive: float = 15.0,
    ) -> None:
        self.require_principal = require_principal
        self.long_poll_timeout = long_poll_timeout
        self.sse_max_duration = sse_max_duration
        self.sse_keepalive = sse_keepalive
        self.types: dict[str, FakeType] = {}
        self.entities: dict[str, FakeEntity] = {}
        self.streams: dict[str, FakeStream] = {}
        self.requests: list[RequestRecord] = []
        self.long_poll_timeouts = 0
        self.sse_disconnects = 0
        self.mangle_send: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.down = False  # every request answered 503, as a proxy does while the server is down
        self.streams_held: asyncio.Event | None = None  # stream reads wait for it (a slow server)
        self._changed = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(middlewares=[self._record])
        app.router.add_post("/_electric/entity-types", self.register_entity_type)
        app.router.add_get("/_electric/entity-types/{name}", self.get_entity_type)
        app.router.add_put("/_electric/entities/{type}/{id}", self.spawn)
        app.router.add_get("/_electric/entities/{type}/{id}", self.get_entity)
        app.router.add_post("/_electric/entities/{type}/{id}/send", self.send)
        app.router.add_post("/_electric/entities/{type}/{id}/signal", self.signal)
        app.router.add_post("/_electric/entities/{type}/{id}/grants", self.grant)
        app.router.add_post("/_electric/entities/{type}/{id}/tags/{key}", self.set_tag)
        app.router.add_get("/{type}/{id}/main", self.read_stream)
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, shutdown_timeout=0.1
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        tasks = [t for e in self.entities.values() for t in (e.handling, e.worker) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for stream in self.streams.values():
            stream.disconnect_sse()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def add_type(
        self,
        name: str,
        slash_commands: list[dict[str, Any]] | None = None,
        handler: Handler | None = None,
        description: str = "test agent",
        inbox_schemas: dict[str, Any] | None = None,
    ) -> FakeType:
        t = FakeType(name, description, slash_commands or [], handler, inbox_schemas)
        self.types[name] = t
        return t

    def grant_type(self, name: str, principal: str, permission: str = "spawn") -> None:
        """``POST /_electric/entity-types/{name}/grants`` for one principal key."""
        self.types[name].grants.append(
            {
                "subject_kind": "principal",
                "subject_value": principal_url(principal),
                "permission": permission,
            }
        )

    # -- waiting for state, for tests -----------------------------------------------------

    def changed(self) -> None:
        """Wake every ``until``: something a test may wait for happened."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def until(self, predicate: Callable[[], bool], limit: float = 5.0) -> None:
        """Return once ``predicate()`` holds; TimeoutError after ``limit`` seconds."""

        async def wait() -> None:
            while not predicate():
                await self._changed.wait()

        await asyncio.wait_for(wait(), limit)

    def reads(self, stream_path: str) -> list[RequestRecord]:
        return [r for r in self.requests if r.method == "GET" and r.path == stream_path]

    def sends(self) -> list[RequestRecord]:
        """The sends the server took (a refused one is in ``requests`` only)."""
        return [
            r
            for r in self.requests
            if r.method == "POST" and r.path.endswith("/send") and r.status == 200
        ]

    # -- principal (server.ts buildTenantContext) ------------------------------------------

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw.strip() else None
            except ValueError:
                body = raw
        record = RequestRecord(
            request.method, request.path, dict(request.query), dict(request.headers), body
        )
        self.requests.append(record)
        self.changed()
        header = request.headers.get("Electric-Principal")
        if self.down:
            response: web.StreamResponse = web.Response(status=503, text="Service Unavailable")
        elif self.require_principal and parse_principal(header) is None:
            response = api_error(401, "UNAUTHORIZED", "Missing Electric-Principal")
        else:
            response = await handler(request)
        record.status = response.status
        return response

    @staticmethod
    def principal(request: web.Request) -> str:
        """The request's principal URL, or a development server's fallback principal (a
        server that requires one has refused the request before this).
        """
        header = request.headers.get("Electric-Principal")
        return parse_principal(header) or principal_url("system:dev-local")

    # -- entity types ---------------------------------------------------------------------

    async def get_entity_type(self, request: web.Request) -> web.Response:
        entity_type = self.types.get(request.match_info["name"])
        if entity_type is None:
            return api_error(404, "NOT_FOUND", "Entity type not found")
        if not entity_type.allows(self.principal(request), "spawn"):
            return api_error(
                401, "UNAUTHORIZED", f"Principal is not allowed to spawn {entity_type.name}"
            )
        return web.json_response(entity_type.body())

    async def register_entity_type(self, request: web.Request) -> web.Response:
        """entity-types-router.ts registerEntityType: registering an existing type again
        replaces its declaration (its slash commands among it) and bumps its revision; the
        streams of its entities are left as they are.
        """
        fields = {"name": _is_str, "description": _is_str, "slash_commands": _is_list}
        body = await self._body(request, fields)
        if isinstance(body, web.Response):
            return body
        name, description = body.get("name"), body.get("description")
        existing = self.types.get(name) if isinstance(name, str) else None
        if existing is not None and not existing.allows(self.principal(request), "manage"):
            return api_error(401, "UNAUTHORIZED", f"Principal is not allowed to manage {name}")
        if not name:
            return api_error(400, "INVALID_REQUEST", "Missing required field: name")
        if not description:
            return api_error(400, "INVALID_REQUEST", "Missing required field: description")
        commands = list(body.get("slash_commands") or [])
        if existing is None:
            entity_type = self.add_type(name, commands, description=description)
        else:
            entity_type = existing
            entity_type.description, entity_type.slash_commands = description, commands
            entity_type.revision += 1
        return web.json_response(entity_type.body(), status=201)

    # -- entities -------------------------------------------------------------------------

    async def _body(
        self, request: web.Request, fields: dict[str, Callable[[Any], bool]]
    ) -> dict[str, Any] | web.Response:
        raw = await request.text()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return api_error(400, "INVALID_REQUEST", "Invalid JSON body")
        if not isinstance(body, dict):
            return api_error(
                400,
                "INVALID_REQUEST",
                "Request body does not match API schema",
                [{"path": "/", "message": "must be object"}],
            )
        problems = _type_problems(body, fields)
        if problems:
            return api_error(
                400, "INVALID_REQUEST", "Request body does not match API schema", problems
            )
        return body

    def _existing(self, request: web.Request) -> FakeEntity | web.Response:
        """entities-router.ts withExistingEntity."""
        type_name, entity_id = request.match_info["type"], request.match_info["id"]
        entity = self.entities.get(f"/{type_name}/{entity_id}")
        if entity is not None:
            return entity
        if type_name in self.types:
            return api_error(404, "NOT_FOUND", f"Entity not found at /{type_name}/{entity_id}")
        return api_error(404, "UNKNOWN_ENTITY_TYPE", f'Entity type "{type_name}" not found')

    async def _entity_body(
        self,
        request: web.Request,
        fields: dict[str, Callable[[Any], bool]],
        required: str | None = None,
    ) -> tuple[FakeEntity, dict[str, Any]] | web.Response:
        """withExistingEntity, then withSchema (``required``: a string field it demands)."""
        entity = self._existing(request)
        if isinstance(entity, web.Response):
            return entity
        body = await self._body(request, fields)
        if isinstance(body, web.Response):
            return body
        if required is not None and required not in body:
            return api_error(
                400,
                "INVALID_REQUEST",
                "Request body does not match API schema",
                [{"path": f"/{required}", "message": "must be string"}],
            )
        return entity, body

    async def spawn(self, request: web.Request) -> web.Response:
        type_name, entity_id = request.match_info["type"], request.match_info["id"]
        if type_name == "principal":
            return api_error(
                400,
                "INVALID_REQUEST",
                "Principal entities are built in and cannot be spawned directly",
            )
        entity_type = self.types.get(type_name)
        if entity_type is None:
            return api_error(404, "UNKNOWN_ENTITY_TYPE", f'Entity type "{type_name}" not found')
        body = await self._body(request, SPAWN_FIELDS)
        if isinstance(body, web.Response):
            return body
        if not entity_type.allows(self.principal(request), "spawn"):
            return api_error(401, "UNAUTHORIZED", f"Principal is not allowed to spawn {type_name}")
        url = f"/{type_name}/{entity_id}"
        if url in self.entities:
            return api_error(409, "DUPLICATE_URL", f'Entity already exists at URL "{url}"')
        stream = FakeStream(f"{url}/main", self)
        entity = FakeEntity(
            entity_type,
            entity_id,
            self.principal(request),
            stream,
            list(body.get("grants") or []),
            dict(body.get("tags") or {}),
        )
        now = "2026-01-01T00:00:00.000Z"
        events = [
            change(
                "entity_created",
                "entity-created",
                {"entity_type": type_name, "timestamp": now, "args": body.get("args") or {}},
            )
        ]
        for command in entity_type.slash_commands:
            row = {**command, "source": "static", "updated_at": now}
            entity.rows[command["name"]] = row
            events.append(change("slash_command", command["name"], row))
        stream.append(*events)
        self.entities[url] = entity
        self.streams[stream.path] = stream
        entity.worker = asyncio.get_running_loop().create_task(self._work(entity))
        return web.json_response(
            {**entity.public(), "txid": 1}, status=201, headers={"x-write-token": str(uuid.uuid4())}
        )

    async def get_entity(self, request: web.Request) -> web.Response:
        entity = self._existing(request)
        if isinstance(entity, web.Response):
            return entity
        if not entity.allows(self.principal(request), "read"):
            return api_error(401, "UNAUTHORIZED", f"Principal is not allowed to read {entity.url}")
        return web.json_response(entity.public())

    async def send(self, request: web.Request) -> web.Response:
        found = await self._entity_body(request, SEND_FIELDS)
        if isinstance(found, web.Response):
            return found
        entity, body = found
        if self.mangle_send is not None:
            body = self.mangle_send(body)
        principal = self.principal(request)
        if not entity.allows(principal, "write"):
            return api_error(401, "UNAUTHORIZED", f"Principal is not allowed to write {entity.url}")
        if "from" in body and body["from"] != principal:
            return api_error(400, "INVALID_REQUEST", "Request from must match Electric-Principal")
        if "from_principal" in body and body["from_principal"] != principal:
            return api_error(
                400, "INVALID_REQUEST", "Request from_principal must match Electric-Principal"
            )
        # entity-manager.ts validateSendRequest
        if entity.status in ("stopping", "stopped", "killed"):
            return api_error(409, "NOT_RUNNING", "Entity is not accepting writes")
        message_type = body.get("type")
        if message_type == "composer_input":
            details = composer_input_details(body.get("payload"))
            if details:
                return api_error(422, "SCHEMA_VALIDATION_FAILED", "Validation failed", details)
        elif message_type and entity.type.inbox_schemas is not None:
            if message_type not in entity.type.inbox_schemas:
                return api_error(
                    422, "UNKNOWN_MESSAGE_TYPE", f'Unknown message type "{message_type}"'
                )
        if "payload" not in body:
            return api_error(400, "INVALID_REQUEST", "Missing required field: payload")
        if entity.forking:
            return api_error(409, "FORK_IN_PROGRESS", "Entity subtree is being forked")
        mode = body.get("mode") or "immediate"
        now = "2026-01-01T00:00:00.000Z"
        value: dict[str, Any] = {
            "from": principal,
            "payload": body["payload"],
            "timestamp": now,
            "mode": mode,
            "status": "pending" if mode in ("queued", "paused") else "processed",
            "from_principal": principal,
        }
        if message_type:
            value["message_type"] = message_type
        key = body.get("key") or f"msg-in-{uuid.uuid4().hex[:12]}"
        txid = str(uuid.uuid4())
        entity.stream.append(change("inbox", key, value, txid=txid))
        entity.inbox.put_nowait(value)
        return web.json_response({"txid": txid})

    async def signal(self, request: web.Request) -> web.Response:
        fields = {"signal": lambda v: v in SIGNALS, "reason": _is_str}
        found = await self._entity_body(request, fields, required="signal")
        if isinstance(found, web.Response):
            return found
        entity, body = found
        if entity.status in ("stopped", "killed"):
            return api_error(409, "INVALID_SIGNAL", f"Cannot signal a {entity.status} entity")
        previous = entity.status
        entity.stream.append(
            change(
                "signal",
                f"sig-{uuid.uuid4().hex[:8]}",
                {"signal": body["signal"], "status": "unhandled"},
            )
        )
        if body["signal"] == "SIGINT" and entity.handling is not None:
            entity.handling.cancel()
        return web.json_response(
            {"signal": body["signal"], "previous_state": previous, "new_state": entity.status}
        )

    async def grant(self, request: web.Request) -> web.Response:
        """createEntityPermissionGrant: a plain insert (the same grant twice is two rows)."""
        found = await self._entity_body(request, {})
        if isinstance(found, web.Response):
            return found
        entity, body = found
        if not _is_grant(body):
            return api_error(400, "INVALID_REQUEST", "Request body does not match API schema")
        if not entity.allows(self.principal(request), "manage"):
            return api_error(
                401, "UNAUTHORIZED", f"Principal is not allowed to manage {entity.url}"
            )
        entity.grants.append(body)
        return web.json_response(
            {"id": len(entity.grants), "entity_url": entity.url, **body}, status=201
        )

    async def set_tag(self, request: web.Request) -> web.Response:
        found = await self._entity_body(request, {"value": _is_str}, required="value")
        if isinstance(found, web.Response):
            return found
        entity, body = found
        if not entity.allows(self.principal(request), "write"):
            return api_error(401, "UNAUTHORIZED", f"Principal is not allowed to write {entity.url}")
        if entity.status in ("stopping", "stopped", "killed"):
            return api_error(409, "NOT_RUNNING", "Entity is not accepting writes")
        entity.tags[request.match_info["key"]] = body["value"]
        return web.json_response(entity.public())

    def stop_entity(self, url: str) -> None:
        """As a SIGTERM would end: the entity stops, its stream closes."""
        entity = self.entities[url]
        entity.status = "stopped"
        entity.stream.append(change("entity_stopped", "stopped", {"timestamp": "now"}))
        entity.stream.close()

    async def _work(self, entity: FakeEntity) -> None:
        """The entity's inbox, handled one message at a time by the type's handler."""
        while True:
            message = await entity.inbox.get()
            if entity.type.handler is None:
                continue
            ctx = EntityContext(self, entity, message)
            entity.handling = asyncio.get_running_loop().create_task(entity.type.handler(ctx))
            try:
                await asyncio.wait({entity.handling})
                if entity.handling.cancelled() and entity.active_run is not None:
                    ctx.end_run(entity.active_run, "completed", "aborted")  # pi-adapter abort
                elif not entity.handling.cancelled() and entity.handling.exception():
                    # process-wake.ts: the error names the wake's latest run and ends nothing
                    ctx.error("HANDLER_FAILED", str(entity.handling.exception()), ctx.last_run)
            finally:
                entity.handling = None
                entity.active_run = None
                self.changed()

    # -- slash commands (context-factory.ts createSlashCommandHelpers) ---------------------

    def register(
        self,
        entity: FakeEntity,
        name: str,
        description: str | None,
        arguments: list[dict[str, Any]] | None,
        owner: str = "handler",
    ) -> None:
        if not SLASH_NAME.fullmatch(name):
            raise ValueError(f"invalid slash command definition: {name}")
        layer: dict[str, Any] = {"name": name, "owner": owner, "updated_at": "now"}
        if description is not None:
            layer["description"] = description
        if arguments is not None:
            layer["arguments"] = arguments
        layers = [x for x in entity.layers.get(name, []) if x["owner"] != owner] + [layer]
        entity.layers[name] = layers
        self._write_effective(entity, name)

    def unregister(self, entity: FakeEntity, name: str) -> None:
        if entity.rows.get(name, {}).get("source") != "dynamic":
            return
        entity.layers[name] = []
        self._write_effective(entity, name)

    def _write_effective(self, entity: FakeEntity, name: str) -> None:
        layers = entity.layers.get(name) or []
        static = next((c for c in entity.type.slash_commands if c["name"] == name), None)
        if layers:
            row = {**layers[-1], "key": name, "source": "dynamic", "dynamic_layers": layers}
        elif static is not None:
            row = {**static, "key": name, "source": "static", "updated_at": "now"}
        else:
            entity.rows.pop(name, None)
            entity.stream.append(change("slash_command", name, None, "delete"))
            return
        operation = "update" if name in entity.rows else "insert"
        entity.rows[name] = row
        entity.stream.append(change("slash_command", name, row, operation))

    # -- streams (durable-streams-rust handlers.rs) ----------------------------------------

    async def read_stream(self, request: web.Request) -> web.StreamResponse:
        if self.streams_held is not None:
            await self.streams_held.wait()
        stream = self.streams.get(request.path)
        if stream is None:
            return web.Response(status=404, text="stream not found")
        entity = self.entities[request.path.removesuffix("/main")]
        if not entity.allows(self.principal(request), "read"):
            return api_error(401, "UNAUTHORIZED", f"Principal is not allowed to read {entity.url}")
        if len(request.query.getall("offset", [])) > 1:
            return web.Response(status=400, text="multiple offset parameters not allowed")
        raw_offset = request.query.get("offset")
        start = parse_offset(raw_offset, stream.tail)
        if start is None:
            return web.Response(status=400, text="malformed offset")
        if start < stream.retained_from:
            if raw_offset not in (None, "-1"):
                return web.Response(status=410, text="offset is before the retained data")
            start = stream.retained_from
        live = request.query.get("live")
        if live is not None and raw_offset is None:
            return web.Response(status=400, text="offset is required for live modes")
        cursor = str(int(request.query.get("cursor", "0") or 0) + 1)
        if live is None:
            return self._range(stream, start, stream.tail, {})
        if live == "long-poll":
            if stream.tail <= start and not stream.closed:
                await stream.wait_beyond(start, self.long_poll_timeout)
            if stream.tail > start:
                return self._range(stream, start, stream.tail, {"Stream-Cursor": cursor})
            headers = {
                "Stream-Next-Offset": format_offset(stream.tail),
                "Stream-Cursor": cursor,
                "Stream-Up-To-Date": "true",
                "Cache-Control": "no-store",
            }
            if stream.closed:
                headers["Stream-Closed"] = "true"
            else:
                self.long_poll_timeouts += 1
                self.changed()
            return web.Response(status=204, headers=headers)
        if live == "sse":
            return await self._sse(request, stream, start, cursor)
        return web.Response(status=400, text="invalid live mode")

    def _range(
        self, stream: FakeStream, start: int, end: int, extra: dict[str, str]
    ) -> web.Response:
        headers = {"Stream-Next-Offset": format_offset(end), "Stream-Up-To-Date": "true", **extra}
        if stream.closed:
            headers["Stream-Closed"] = "true"
        stream.mark_delivered(end)
        return web.Response(
            body=json.dumps(stream.events[start:end]).encode(),
            content_type="application/json",
            headers=headers,
        )

    async def _sse(
        self, request: web.Request, stream: FakeStream, start: int, cursor: str
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "Connection": "close",
            }
        )
        await response.prepare(request)
        conn = SseConnection(sent=start)
        stream.sse.append(conn)
        deadline = time.monotonic() + self.sse_max_duration

        def control(up_to_date: bool, closed: bool) -> str:
            data: dict[str, Any] = {"streamNextOffset": format_offset(conn.sent)}
            if not closed:
                data["streamCursor"] = cursor
            if up_to_date:
                data["upToDate"] = True
            if closed:
                data["streamClosed"] = True
            return f"event: control\ndata:{json.dumps(data)}\n\n"

        try:
            if stream.tail <= start and not stream.closed:
                await response.write(control(True, False).encode())
            await self._sse_loop(response, stream, conn, deadline, control)
        except ConnectionError:
            return response  # the client went away
        finally:
            stream.sse.remove(conn)
            self.changed()
        if conn.abort and request.transport is not None:
            request.transport.abort()  # a dropped connection, not an ended response
            return response
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def _sse_loop(
        self,
        response: web.StreamResponse,
        stream: FakeStream,
        conn: SseConnection,
        deadline: float,
        control: Callable[[bool, bool], str],
    ) -> None:
        """Data and control events until the stream closes, the deadline or a disconnect."""
        while True:
            if stream.tail > conn.sent:
                batch = stream.events[conn.sent : stream.tail]
                frame = (
                    "event: data\n"
                    + "".join(f"data:{line}\n" for line in json.dumps(batch).split("\n"))
                    + "\n"
                )
                if conn.torn:
                    await response.write(frame.encode())
                    return
                conn.sent = stream.tail
                closed = stream.closed
                await response.write((frame + control(True, closed)).encode())
                stream.mark_delivered(conn.sent)
                if closed:
                    return
                continue
            if stream.closed:
                await response.write(control(True, True).encode())
                return
            if conn.closing:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return  # the routine close: the client reconnects from its offset
            conn.wake.clear()
            try:
                await asyncio.wait_for(conn.wake.wait(), min(self.sse_keepalive, remaining))
            except TimeoutError:
                await response.write(control(True, False).encode())
