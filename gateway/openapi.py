"""OpenAPI 3.1 for every HTTP route of the gateway, served at ``GET /openapi.json``.

Whoever adds a route documents it beside it: ``document(app, Operation(...))`` with the
pydantic models (or dataclasses) its handler reads and answers with, so that the schema
cannot drift from the handler. The document is built once, on the first request, from the
operations of the app.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web
from pydantic import TypeAdapter

REF = "#/components/schemas/{model}"
# A pydantic model, or a dataclass (such as an event of the core's that a body carries as is).
Model = type[Any]


@dataclass(frozen=True)
class Body:
    """One media type of a request or a response: a model, or a raw JSON schema."""

    content_type: str = "application/json"
    model: Model | None = None
    schema: Mapping[str, Any] | None = None
    events: Mapping[str, Model] | None = None  # text/event-stream: event -> data


@dataclass(frozen=True)
class Response:
    description: str
    bodies: tuple[Body, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)  # name -> description


@dataclass(frozen=True)
class Param:
    name: str
    where: Literal["query", "header", "path"]  # a path parameter is always required
    description: str
    required: bool = False
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "string"})


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: str
    tag: str
    responses: Mapping[int, Response]
    request: tuple[Body, ...] = ()
    params: tuple[Param, ...] = ()
    bearer: bool = False  # needs ``Authorization: Bearer <token>``
    description: str = ""


OPERATIONS = web.AppKey("slashgate.openapi.operations", list[Operation])
_DOCUMENT = web.AppKey("slashgate.openapi.document", dict[str, Any])


def document(app: web.Application, *operations: Operation) -> None:
    """Describe routes of ``app`` in its OpenAPI document."""
    app.setdefault(OPERATIONS, []).extend(operations)


def build(operations: list[Operation], version: str) -> dict[str, Any]:
    models = _models(operations)
    refs, defs = TypeAdapter.json_schemas(
        [(i, "validation", TypeAdapter(m)) for i, m in enumerate(models)], ref_template=REF
    )
    ref = {model: refs[(i, "validation")] for i, model in enumerate(models)}
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op, ref)
    components: dict[str, Any] = {"schemas": defs.get("$defs", {})}
    if any(op.bearer for op in operations):
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "slashgate",
            "version": version,
            "description": "A sidecar gateway that puts an agent runtime on Telegram, Slack "
            "and plain HTTP, with one slash contract.",
        },
        "paths": paths,
        "components": components,
    }


def _models(operations: list[Operation]) -> list[Model]:
    found: dict[Model, None] = {}
    for op in operations:
        bodies = [*op.request, *(b for r in op.responses.values() for b in r.bodies)]
        for body in bodies:
            if body.model is not None:
                found[body.model] = None
            for model in (body.events or {}).values():
                found[model] = None
    return list(found)


def _content(bodies: tuple[Body, ...], ref: dict[Model, Any]) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for body in bodies:
        media: dict[str, Any] = {
            "schema": ref[body.model] if body.model is not None else dict(body.schema or {})
        }
        if body.events:
            media["x-events"] = {name: ref[model] for name, model in body.events.items()}
        content[body.content_type] = media
    return content


def _operation(op: Operation, ref: dict[Model, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "operationId": re.sub(r"[^A-Za-z0-9]+", "_", f"{op.method} {op.path}").strip("_"),
        "summary": op.summary,
        "tags": [op.tag],
    }
    if op.description:
        result["description"] = op.description
    if op.params:
        result["parameters"] = [
            {
                "name": p.name,
                "in": p.where,
                "description": p.description,
                "required": p.required or p.where == "path",
                "schema": dict(p.schema),
            }
            for p in op.params
        ]
    if op.request:
        result["requestBody"] = {"required": True, "content": _content(op.request, ref)}
    result["responses"] = {
        str(status): {
            "description": response.description,
            **({"content": _content(response.bodies, ref)} if response.bodies else {}),
            **(
                {
                    "headers": {
                        name: {"description": text, "schema": {"type": "string"}}
                        for name, text in response.headers.items()
                    }
                }
                if response.headers
                else {}
            ),
        }
        for status, response in sorted(op.responses.items())
    }
    if op.bearer:
        result["security"] = [{"bearer": []}]
    return result


def mount(app: web.Application, version: str) -> None:
    """Serve ``GET /openapi.json``: built at start-up, once every channel has documented its
    routes.
    """

    async def built(app: web.Application) -> None:
        app[_DOCUMENT] = build(app.get(OPERATIONS, []), version)

    async def serve(request: web.Request) -> web.Response:
        return web.json_response(request.app[_DOCUMENT])

    app.on_startup.append(built)
    app.router.add_get("/openapi.json", serve)
