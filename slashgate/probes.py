"""What an operator's tools ask the gateway: ``/healthz`` (it serves), ``/readyz`` (it can do
its work: the runtime opens sessions, the store answers, every channel is connected) and
``/metrics`` (Prometheus).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from aiohttp import web
from pydantic import BaseModel, Field

from gateway.api import Channel
from gateway.core import Gateway
from gateway.logs import Secrets
from gateway.openapi import Body, Operation, Response, document
from gateway.state import store_problem

CHECK_TIMEOUT = 5.0  # seconds one readiness check may take before it counts as not ready

Check = Callable[[], Awaitable[str | None]]
"""None when that part is ready; else what is wrong."""


class Health(BaseModel):
    status: Literal["ok"]


class PartReadiness(BaseModel):
    ready: bool
    detail: str | None = Field(None, description="What is not ready, when it is not.")


class Readiness(BaseModel):
    status: Literal["ready", "not_ready"]
    checks: dict[str, PartReadiness] = Field(
        description="By part: runtime, store, and each enabled channel."
    )


def checks(gateway: Gateway, channels: Sequence[Channel]) -> dict[str, Check]:
    """The parts whose readiness ``/readyz`` and ``slashgate check`` report."""
    found: dict[str, Check] = {
        "runtime": gateway.readiness,
        "store": lambda: store_problem(gateway.store),
    }
    found.update({channel.name: channel.readiness for channel in channels})
    return found


async def readiness(parts: dict[str, Check], secrets: Secrets) -> Readiness:
    async def one(check: Check) -> str | None:
        try:
            return await asyncio.wait_for(check(), CHECK_TIMEOUT)
        except TimeoutError:
            return f"no answer within {CHECK_TIMEOUT:g} s"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    results = await asyncio.gather(*(one(check) for check in parts.values()))
    found = {
        name: PartReadiness(
            ready=problem is None, detail=None if problem is None else secrets.mask(problem)
        )
        for name, problem in zip(parts, results, strict=True)
    }
    ready = all(part.ready for part in found.values())
    return Readiness(status="ready" if ready else "not_ready", checks=found)


def mount(
    app: web.Application, gateway: Gateway, channels: Sequence[Channel], secrets: Secrets
) -> None:
    async def healthz(request: web.Request) -> web.Response:
        return web.json_response(Health(status="ok").model_dump())

    async def readyz(request: web.Request) -> web.Response:
        result = await readiness(checks(gateway, channels), secrets)
        status = 200 if result.status == "ready" else 503
        return web.json_response(result.model_dump(mode="json"), status=status)

    async def metrics(request: web.Request) -> web.Response:
        body = gateway.metrics.render()
        return web.Response(body=body, headers={"Content-Type": gateway.metrics.content_type})

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    json_ready = (Body(model=Readiness),)
    document(
        app,
        Operation(
            "GET", "/healthz", "Liveness: 200 while the gateway serves", "operations",
            {200: Response("Serving", (Body(model=Health),))},
        ),
        Operation(
            "GET", "/readyz", "Readiness: 200 only when every part can do its work",
            "operations",
            {
                200: Response("Ready", json_ready),
                503: Response("Not ready; ``checks`` says which part and why", json_ready),
            },
        ),
        Operation(
            "GET", "/metrics", "Prometheus metrics (text exposition format)", "operations",
            {200: Response("The metrics", (Body("text/plain", schema={"type": "string"}),))},
        ),
        Operation(
            "GET", "/openapi.json", "This document (OpenAPI 3.1)", "operations",
            {200: Response("The document", (Body(schema={"type": "object"}),))},
        ),
    )  # fmt: skip
