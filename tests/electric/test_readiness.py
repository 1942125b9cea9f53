"""``/readyz`` for the Electric runtime: the server answers, and so does its state store
(whose operations ``/metrics`` times)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import aiohttp

from gateway.state import TimedStore
from slashgate.registry import build_runtime

from ..conftest import make_settings
from ..metrics import scrape
from .conftest import GatewayFactory, say


async def readyz(url: str) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/readyz") as response:
        return response.status, await response.json()


async def test_ready_while_server_and_store_answer_and_not_once_the_store_fails(
    electric_gateway: GatewayFactory, tmp_path: Path
) -> None:
    async with electric_gateway(store="sqlite", state_path=tmp_path / "state.sqlite3") as server:
        status, body = await readyz(server.url)
        assert (status, body["status"]) == (200, "ready")
        await say(server, "hello")  # the conversation's entity is kept in the store
        seen = await scrape(server.url)
        for operation in ("open", "get", "set"):  # the runtime's own use of its store
            labels = {"store": "runtime", "operation": operation}
            assert seen.value("slashgate_store_seconds_count", **labels) >= 1, operation
        for operation in ("open", "ping"):  # the gateway's (journal, claims, leases)
            labels = {"store": "state", "operation": operation}
            assert seen.value("slashgate_store_seconds_count", **labels) >= 1, operation
        store = server.gateway.runtime.store  # type: ignore[attr-defined]
        assert isinstance(store, TimedStore)
        await store.inner.close()  # the database goes away under the gateway
        status, body = await readyz(server.url)
    assert (status, body["status"]) == (503, "not_ready")
    runtime = body["checks"]["runtime"]
    assert runtime["ready"] is False
    assert runtime["detail"].startswith("the state store does not answer")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_not_ready_while_the_server_is_down(gateway_server: Any) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    runtime = build_runtime(make_settings(runtime="electric", electric_url=url))
    async with gateway_server(runtime, electric_url=url) as server:
        status, body = await readyz(server.url)
    assert status == 503
    assert body["checks"]["runtime"]["detail"].startswith(f"{url} does not answer")
    assert body["checks"]["webhook"] == {"ready": True, "detail": None}
