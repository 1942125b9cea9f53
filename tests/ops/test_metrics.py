"""``GET /metrics`` moves with real traffic on the webhook channel and the core."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from gateway.events import MessageDelta, RuntimeEvent
from gateway.metrics import STORE_BUCKETS, TURN_BUCKETS, Metrics
from gateway.runtimes.base import Runtime, RuntimeSession, Turn, UpdateListener
from gateway.state import MemoryStore, TimedStore
from tests.conftest import ServerFactory
from tests.metrics import Scrape, scrape
from tests.probe import Probe

JSON_TYPE = {"Content-Type": "application/json"}


async def post(url: str, text: str, conversation: str = "c1", **headers: str) -> dict[str, Any]:
    body = {"conversation": conversation, "user": "u1", "text": text}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/v1/messages", json=body, headers=headers) as response,
    ):
        assert response.status == 200
        result: dict[str, Any] = await response.json()
        return result


async def test_inputs_replies_turns_sessions_and_replays_are_counted(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server() as server:
        await post(server.url, "/echo hi")
        await post(server.url, "/nope")
        await post(server.url, "hello")
        for _ in range(2):  # the second is a replay: not run, counted as a dedupe hit
            await post(server.url, "/echo once", **{"Idempotency-Key": "k1"})
        await post(server.url, "/new")
        await post(server.url, "/echo again")  # opens the session again
        async with aiohttp.ClientSession() as http:
            await http.post(f"{server.url}/v1/messages", data=b"{not json", headers=JSON_TYPE)
        seen = await scrape(server.url)

    def inputs(kind: str) -> float:
        return seen.value("slashgate_inputs_total", channel="webhook", classification=kind)

    assert (inputs("supported"), inputs("unsupported"), inputs("not_slash")) == (4, 1, 1)
    replies = {
        category: seen.value("slashgate_replies_total", channel="webhook", category=category)
        for category in ("ok", "unsupported")
    }
    assert replies == {"ok": 5, "unsupported": 1}  # /new is a gateway command: ok, no turn
    turns = {"channel": "webhook", "runtime": "embedded"}
    assert seen.value("slashgate_turn_seconds_count", **turns) == 4
    assert seen.value("slashgate_turn_first_delta_seconds_count", **turns) == 4
    assert seen.value("slashgate_runtime_session_starts_total", runtime="embedded") == 2
    assert seen.value("slashgate_runtime_session_restarts_total", runtime="embedded") == 1
    assert seen.value("slashgate_dedupe_hits_total", channel="webhook") == 1
    assert seen.value("slashgate_malformed_requests_total", status="400") == 1


async def test_queue_depth_and_running_turns_are_read_when_scraped(
    gateway_server: ServerFactory,
) -> None:
    probe = Probe()
    async with gateway_server(probe.runtime()) as server:
        first = asyncio.create_task(post(server.url, "/wait"))
        await probe.started.wait()
        second = asyncio.create_task(post(server.url, "more, once it is done"))
        seen = await _scrape_until(server.url, lambda s: s.value("slashgate_queued_inputs") == 1)
        assert seen.value("slashgate_running_turns") == 1
        probe.gate.set()
        await asyncio.gather(first, second)
        seen = await scrape(server.url)
    assert (seen.value("slashgate_queued_inputs"), seen.value("slashgate_running_turns")) == (0, 0)


async def _scrape_until(url: str, condition: Any, rounds: int = 200) -> Scrape:
    for _ in range(rounds):
        seen = await scrape(url)
        if condition(seen):
            return seen
    raise AssertionError("the metrics never showed it")


class _Broken(Runtime):
    """A runtime whose sessions cannot open (``open``) or whose turns break (``turn``)."""

    name = "broken"

    def __init__(self, stage: str) -> None:
        self.stage = stage

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        if self.stage == "open":
            raise RuntimeError("the agent is not there")
        return _BreakingSession()


class _BreakingSession(RuntimeSession):
    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:  # type: ignore[override]
        yield MessageDelta("half a reply")
        raise ConnectionResetError("the agent's pipe broke")

    async def cancel(self) -> None:
        """Nothing to stop: the stream breaks on its own."""


async def test_runtime_crashes_are_counted_by_stage(gateway_server: ServerFactory) -> None:
    for stage in ("open", "turn"):
        async with gateway_server(_Broken(stage), inventory_wait=0) as server:
            body = await post(server.url, "hello")
            seen = await scrape(server.url)
        assert body["reply"]["category"] == "generic"
        assert seen.value("slashgate_runtime_crashes_total", runtime="broken", stage=stage) == 1
        assert seen.value("slashgate_replies_total", channel="webhook", category="generic") == 1


async def test_two_gateways_in_one_process_count_apart(gateway_server: ServerFactory) -> None:
    async with gateway_server() as busy, gateway_server() as idle:
        await post(busy.url, "/echo hi")
        counted, untouched = await scrape(busy.url), await scrape(idle.url)
    assert counted.total("slashgate_inputs_total") == 1
    assert untouched.total("slashgate_inputs_total") == 0


async def test_store_operations_are_timed_by_store_and_operation() -> None:
    metrics = Metrics()
    store = TimedStore(MemoryStore(), metrics.store_observer("state"))
    await store.set("a:b", {"n": 1})
    assert await store.get("a:b") == {"n": 1}
    assert await store.delete("a:b") is True
    with metrics.timed("journal", "append"):
        pass
    count = metrics.registry.get_sample_value
    for operation in ("set", "get", "delete"):
        labels = {"store": "state", "operation": operation}
        assert count("slashgate_store_seconds_count", labels) == 1
    assert count("slashgate_store_seconds_count", {"store": "journal", "operation": "append"}) == 1


def test_turn_metrics_are_exposed_as_prometheus_client_exposes_its_own() -> None:
    """The counters and histograms moved on every turn, store operation and platform call are
    plain numbers here: the text a scrape gets is what prometheus_client's Counter and
    Histogram give for the same updates.
    """
    ours = Metrics(created=True)  # as prometheus_client, which has them by default
    theirs = CollectorRegistry()
    inputs = Counter(
        "slashgate_inputs",
        "Inputs handled, by channel and contract classification.",
        ["channel", "classification"],
        registry=theirs,
    )
    seconds = Histogram(
        "slashgate_turn_seconds",
        "Runtime turns, from start to the final reply.",
        ["channel", "runtime"],
        buckets=TURN_BUCKETS,
        registry=theirs,
    )
    for family in (ours.inputs, inputs):
        for labels in (("webhook", "supported"), ("webhook", "supported"), ("tg", "invalid")):
            family.labels(*labels).inc()
    platform = Counter(
        "slashgate_platform_requests",
        "Platform API calls (each attempt), by platform, method and outcome "
        "(ok, rate_limited, client_error, server_error, network_error).",
        ["platform", "method", "outcome"],
        registry=theirs,
    )
    store = Histogram(
        "slashgate_store_seconds",
        "Durable state operations, by store and operation.",
        ["store", "operation"],
        buckets=STORE_BUCKETS,
        registry=theirs,
    )
    for family in (ours.turn_seconds, seconds):
        for value in (0.0001, 0.05, 0.0501, 1, 2.5, 700, 0.3):
            family.labels("webhook", "embedded").observe(value)
    observe = ours.store_observer("journal")
    for value in (0.00001, 0.0005, 0.003, 3.0):
        observe("append", value)
        store.labels("journal", "append").observe(value)
    for family in (ours.platform_requests, platform):
        for labels in (("telegram", "sendMessage", "ok"), ("slack", "chat.update", "ok")):
            family.labels(*labels).inc()

    def shown(text: bytes, names: tuple[str, ...]) -> list[str]:
        """The lines of these metrics, creation times left out (they differ by a few us)."""
        return [
            re.sub(r"_created(\{.*\})? .*", r"_created\1", line)
            for line in text.decode().splitlines()
            if any(name in line for name in names)
        ]

    names = (
        "slashgate_inputs",
        "slashgate_turn_seconds",
        "slashgate_store_seconds",
        "slashgate_platform_requests",
    )
    expected = shown(generate_latest(theirs), names)
    assert expected and shown(ours.render(), names) == expected


async def test_no_created_series_unless_asked_for(gateway_server: ServerFactory) -> None:
    async with gateway_server() as server:
        await post(server.url, "/echo hi")
        async with aiohttp.ClientSession() as http, http.get(f"{server.url}/metrics") as got:
            text = await got.text()
    assert "slashgate_inputs_total{" in text and "slashgate_store_seconds_count{" in text
    assert "_created" not in text
    asked = Metrics(created=True)
    asked.inputs.labels("webhook", "supported").inc()
    asked.runtime_starts.labels("embedded").inc()
    created = [line for line in asked.render().decode().splitlines() if "_created{" in line]
    assert [line.split("{")[0] for line in created] == [
        "slashgate_inputs_created",
        "slashgate_runtime_session_starts_created",
    ]
