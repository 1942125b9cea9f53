"""Every refusal and failure of the server reaches the user as exactly one categorized reply."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from aiohttp import web

from slashgate.registry import build_runtime

from ..conftest import make_settings
from ..http import read_events
from .conftest import say, say_streaming
from .fake_server import FakeElectric


def _reply(body: dict[str, Any]) -> tuple[str | None, str]:
    return body["reply"]["category"], body["reply"]["text"]


async def test_422_validation_failure_is_generic_with_the_server_details(
    fake: FakeElectric, electric_gateway
):
    def rename(body: dict[str, Any]) -> dict[str, Any]:  # what a broken proxy might do
        body["payload"]["nodes"][0]["name"] = "Deploy"
        return body

    fake.mangle_send = rename
    async with electric_gateway() as server:
        body = await say(server, "/deploy prod")

    assert _reply(body) == (
        "generic",
        "Slash command /deploy failed: Validation failed: "
        "/nodes/0/name must be a lowercase kebab-case command name",
    )


async def test_400_invalid_request_is_generic_with_the_server_message(
    fake: FakeElectric, electric_gateway
):
    fake.mangle_send = lambda body: {**body, "from": "/principal/user%3Aeve"}
    async with electric_gateway() as server:
        body = await say(server, "hello")

    assert _reply(body) == (
        "generic",
        "The request failed: Request from must match Electric-Principal",
    )


async def test_404_unknown_entity_type_is_generic(fake: FakeElectric, electric_gateway):
    async with electric_gateway(electric_entity_type="ghost", inventory_wait=0.05) as server:
        plain = await say(server, "hello")
        slash = await say(server, "/status")

    assert _reply(plain) == ("generic", 'The request failed: Entity type "ghost" not found')
    assert "ghost" in slash["reply"]["text"]  # host commands still answer
    assert fake.entities == {}


async def test_409_not_running_is_generic(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        await say(server, "hello")
        (url,) = fake.entities
        fake.stop_entity(url)
        body = await say(server, "/deploy prod")

    assert _reply(body) == (
        "generic",
        "Slash command /deploy failed: Entity is not accepting writes",
    )


async def test_409_fork_in_progress_is_busy(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        await say(server, "hello")
        (entity,) = fake.entities.values()
        entity.forking = True
        body = await say(server, "/deploy prod")

    assert _reply(body) == (
        "busy",
        "Slash command /deploy could not run because the session is busy. Retry in a moment.",
    )


async def test_401_without_a_principal_on_a_server_that_requires_one(
    fake: FakeElectric, electric_gateway
):
    fake.require_principal = True
    async with electric_gateway(inventory_wait=0.05) as server:
        body = await say(server, "hello")

    assert _reply(body) == (
        "generic",
        "The request failed: the Electric Agents server refused the gateway, which sends no "
        'principal (electric_principal is not set): "Missing Electric-Principal" (set '
        "electric_principal and grant it spawn on the entity type assistant)",
    )


async def test_a_principal_without_the_spawn_grant_is_told_as_such_never_as_unsupported(
    fake: FakeElectric, electric_gateway, caplog: pytest.LogCaptureFixture
):
    """The server requires ``spawn`` on the type of every named principal, in development
    mode too: until it is granted, every input (commands included, whose list could not be
    read) gets the refusal, and the start-up log says what is missing.
    """
    refused = (
        "the Electric Agents server refused the principal service:slashgate: "
        '"Principal is not allowed to spawn assistant" '
        "(it needs the spawn grant on the entity type assistant)"
    )
    async with electric_gateway(electric_principal="service:slashgate", inventory_wait=0.05) as (
        server
    ):
        echo = await say(server, "/echo hi")
        deploy = await say(server, "/deploy prod")
        plain = await say(server, "hello")
        fake.grant_type("assistant", "service:slashgate")
        granted = await say(server, "hello")
        after = await say(server, "/deploy prod")

    assert _reply(echo) == ("generic", f"Slash command /echo failed: {refused}")
    assert _reply(deploy) == ("generic", f"Slash command /deploy failed: {refused}")
    assert _reply(plain) == ("generic", f"The request failed: {refused}")
    assert _reply(granted) == (None, "hello")
    assert _reply(after) == (None, "Deploying prod now.")
    logged = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert logged == [
        f"cannot read the entity type assistant at {fake.url}: {refused}; "
        "every input fails until this is fixed"
    ]
    assert "unreachable" not in caplog.text


async def test_gateway_principal_creates_and_reads_users_send(fake: FakeElectric, electric_gateway):
    fake.require_principal = True
    fake.grant_type("assistant", "service:slashgate")
    async with electric_gateway(electric_principal="service:slashgate") as server:
        body = await say(server, "hello", user="bob")

    assert _reply(body) == (None, "hello")
    (entity,) = fake.entities.values()
    assert entity.created_by == "/principal/service%3Aslashgate"
    reads = [r for r in fake.requests if r.path == entity.stream.path]
    assert {r.headers["Electric-Principal"] for r in reads} == {"service:slashgate"}
    assert fake.sends()[0].headers["Electric-Principal"] == "user:webhook:bob"


async def test_a_user_the_gateway_may_not_grant_gets_the_refusal(
    fake: FakeElectric, electric_gateway
):
    fake.require_principal = True
    fake.grant_type("assistant", "service:slashgate")
    fake.grant_type("assistant", "service:other")
    async with aiohttp.ClientSession() as http:  # someone else's entity, readable by the gateway
        async with http.put(
            f"{fake.url}/_electric/entities/assistant/slashgate-webhook_3Ac1",
            json={
                "grants": [
                    {
                        "subject_kind": "principal",
                        "subject_value": "/principal/service%3Aslashgate",
                        "permission": "read",
                    }
                ]
            },
            headers={"Electric-Principal": "service:other"},
        ) as response:
            assert response.status == 201
    async with electric_gateway(electric_principal="service:slashgate") as server:
        body = await say(server, "hello")

    assert _reply(body) == (
        "generic",
        "The request failed: Principal is not allowed to write /assistant/slashgate-webhook_3Ac1",
    )
    asked = [(r.path.rsplit("/", 1)[1], r.status) for r in fake.requests if r.method == "POST"]
    assert asked == [("send", 401), ("grants", 401)]  # one grant asked for, no send again


async def test_unreachable_server_is_generic(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        await say(server, "hello")
        await fake.stop()
        body = await say(server, "/deploy prod")

    category, text = _reply(body)
    assert category == "generic"
    assert text.startswith(
        f"Slash command /deploy failed: cannot reach the Electric Agents server at {fake.url}"
    )


async def test_error_event_of_the_run_fails_the_turn(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        events = await say_streaming(server, "fail")

    assert [d["text"] for e, d in events if e == "delta"] == ["Trying"]
    assert events[-1][1]["reply"] == {
        "text": "The request failed: boom",
        "category": "generic",
        "stop_reason": None,
    }


async def test_handler_failure_without_a_run_fails_the_turn(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        body = await say(server, "crash")

    assert _reply(body) == ("generic", "The request failed: handler crashed")


async def test_handler_failure_leaving_its_run_open_fails_the_turn(
    fake: FakeElectric, electric_gateway
):
    async with electric_gateway() as server:
        events = await say_streaming(server, "crash mid-run")

    assert [d["text"] for e, d in events if e == "delta"] == ["Half"]
    assert events[-1][1]["reply"]["text"] == "The request failed: handler crashed mid-run"


async def test_error_text_is_categorized(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        body = await say(server, "processing")

    assert _reply(body) == ("busy", "The session is busy. Retry in a moment.")


async def test_cancel_interrupts_the_run_with_sigint(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server, aiohttp.ClientSession() as http:
        async with http.post(
            f"{server.url}/v1/messages",
            json={"conversation": "c1", "user": "alice", "text": "slow"},
            headers={"Accept": "text/event-stream"},
        ) as response:
            events = read_events(response)
            async for event, _ in events:
                if event == "delta":  # the user sees the run going
                    break
            cancelled = await say(server, "/cancel")
            final = [data async for event, data in events if event == "reply"]

    assert cancelled["reply"]["text"] == "Cancelled the running turn."
    assert final[0]["reply"] == {
        "text": "Working\n\n_(cancelled)_",
        "category": None,
        "stop_reason": "cancelled",
    }
    assert [r.body for r in fake.requests if r.path.endswith("/signal")] == [{"signal": "SIGINT"}]
    (entity,) = fake.entities.values()
    await fake.until(lambda: entity.stream.events[-1]["value"].get("finish_reason") == "aborted")


async def test_the_run_deadline_interrupts_the_agent(fake: FakeElectric, electric_gateway):
    async with electric_gateway(run_timeout=0.5) as server:
        body = await say(server, "slow")
        (entity,) = fake.entities.values()
        await fake.until(lambda: entity.handling is None)  # the handler was interrupted
        after = await say(server, "next")

    assert _reply(body) == ("timeout", "The request timed out. Retry in a moment.")
    assert [r.body for r in fake.requests if r.path.endswith("/signal")] == [{"signal": "SIGINT"}]
    assert _reply(after) == (None, "next")


async def test_a_server_that_is_not_electric_agents(gateway_server):
    """Answers that are not the server's (an HTML 404, a JSON 200 of another shape) are one
    generic failure each, never a crash of the gateway.
    """

    async def anything(request: web.Request) -> web.Response:
        if request.method == "PUT" and request.path.endswith("c1"):
            return web.json_response({"ok": True}, status=201)
        if request.method == "PUT" and request.path.endswith("c2"):
            return web.Response(status=404, text="no such route")
        return web.Response(status=502, text="<html>\n<p>Bad gateway</p>\n</html>")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", anything)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    try:
        values = {"electric_url": url, "inventory_wait": 0.05}
        runtime = build_runtime(make_settings(runtime="electric", **values))
        async with gateway_server(runtime=runtime, **values) as server:
            wrong_json = await say(server, "hello", conversation="c1")
            plain_text = await say(server, "hello", conversation="c2")
            html = await say(server, "hello", conversation="c3")
    finally:
        await runner.cleanup()

    assert _reply(wrong_json) == (
        "generic",
        "The request failed: unexpected answer to PUT /_electric/entities/assistant/"
        "slashgate-webhook_3Ac1",
    )
    assert _reply(plain_text) == ("generic", "The request failed: HTTP 404: no such route")
    assert _reply(html) == ("generic", "The request failed: HTTP 502")
