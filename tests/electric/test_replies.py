"""What a user sees through the webhook channel with the gateway in front of Electric Agents."""

from __future__ import annotations

import aiohttp

from contract import composer_input_problems, utf16_len
from gateway.runtimes.electric.runtime import ElectricRuntime
from gateway.state import SqliteStore

from .conftest import ENTITY_TYPE, commands, say, say_streaming
from .fake_server import FakeElectric


async def test_plain_text_reply_is_streamed_from_text_deltas(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        events = await say_streaming(server, "hello there, agent")

    deltas = [data["text"] for event, data in events if event == "delta"]
    reply = events[-1][1]["reply"]
    assert reply == {"text": "hello there, agent", "category": None, "stop_reason": "end_turn"}
    assert len(deltas) > 1 and "".join(deltas) == "hello there, agent"  # one per text_delta


async def test_send_carries_the_user_principal_and_the_composer_input_as_is(
    fake: FakeElectric, electric_gateway
):
    async with electric_gateway() as server:
        body = await say(server, "/deploy staging", user="U 42/ü")

    assert body["reply"]["text"] == "Deploying staging now."
    (send,) = fake.sends()
    assert send.headers["Electric-Principal"] == "user:webhook:U_2042_2F_C3_BC"
    assert "from" not in send.body
    assert send.body["type"] == "composer_input" and send.body["mode"] == "immediate"
    assert send.body["payload"] == body["forwarded"]["payload"]
    assert send.body["payload"]["nodes"][0] == {
        "kind": "slash_command",
        "start": 0,
        "end": 7,
        "raw": "/deploy",
        "name": "deploy",
    }


async def test_one_entity_per_conversation(fake: FakeElectric, electric_gateway):
    async with electric_gateway(electric_id_prefix="gw") as server:
        await say(server, "one", conversation="room/1")
        await say(server, "two", conversation="room/1")
        await say(server, "three", conversation="room 2")

    assert sorted(fake.entities) == [
        f"/{ENTITY_TYPE}/gw-webhook_3Aroom_202",
        f"/{ENTITY_TYPE}/gw-webhook_3Aroom_2F1",
    ]


async def test_only_the_conversations_users_may_write_to_its_entity(
    fake: FakeElectric, electric_gateway
):
    fake.require_principal = True
    fake.grant_type("assistant", "service:slashgate")
    async with electric_gateway(electric_principal="service:slashgate") as server:
        first = await say(server, "one", user="alice")
        again = await say(server, "two", user="alice")
        other = await say(server, "three", user="bob")

    assert [b["reply"]["text"] for b in (first, again, other)] == ["one", "two", "three"]
    (entity,) = fake.entities.values()
    assert entity.grants == [
        {
            "subject_kind": "principal",
            "subject_value": f"/principal/user%3Awebhook%3A{name}",
            "permission": "write",
        }
        for name in ("alice", "bob")
    ], "one grant per user, given at the user's first send"
    # Anyone else, a user of the same server included, is refused.
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{fake.url}/_electric/entities{entity.url}/send",
            json={"type": "composer_input", "payload": {"source": "hi", "nodes": []}},
            headers={"Electric-Principal": "user:mallory"},
        ) as response,
    ):
        assert response.status == 401


async def test_new_starts_a_fresh_entity_and_restarts_keep_it(
    fake: FakeElectric, electric_gateway, tmp_path
):
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with electric_gateway(electric_id_prefix="gw", **state) as server:
        await say(server, "before")
        assert (await say(server, "/new"))["reply"]["text"] == "Started a new session."
        assert (await say(server, "after"))["reply"]["text"] == "after"
    async with electric_gateway(electric_id_prefix="gw", **state) as server:
        assert (await say(server, "after a restart"))["reply"]["text"] == "after a restart"

    first, fresh = f"/{ENTITY_TYPE}/gw-webhook_3Ac1", f"/{ENTITY_TYPE}/gw-webhook_3Ac1.g1"
    assert sorted(fake.entities) == [first, fresh]
    sent = [r.path.removeprefix("/_electric/entities").removesuffix("/send") for r in fake.sends()]
    assert sent == [first, fresh, fresh], "after /new every message goes to the new entity"


async def test_new_drops_the_old_stream_position(fake: FakeElectric, electric_gateway, tmp_path):
    path = tmp_path / "state.sqlite3"
    async with electric_gateway(store="sqlite", state_path=path) as server:
        await say(server, "before")
        await say(server, "/new")
        await say(server, "after")

    store = SqliteStore(path)
    await store.open()
    try:
        old = await store.get(f"electric:stream:{ENTITY_TYPE}/slashgate-webhook_3Ac1")
        current = await store.get(f"electric:stream:{ENTITY_TYPE}/slashgate-webhook_3Ac1.g1")
        generation = await store.get("electric:generation:slashgate:webhook:c1")
    finally:
        await store.close()
    assert old is None, "nothing reads the old entity's stream again"
    assert current is not None and generation == 1


async def test_new_survives_a_restart_that_lost_the_store(fake: FakeElectric, electric_gateway):
    async with electric_gateway(store="memory") as server:
        await say(server, "before")
        await say(server, "/new")
    async with electric_gateway(store="memory") as server:  # a new, empty store
        body = await say(server, "after a restart")

    assert body["reply"]["text"] == "after a restart"
    base, fresh = (
        f"/{ENTITY_TYPE}/slashgate-webhook_3Ac1",
        f"/{ENTITY_TYPE}/slashgate-webhook_3Ac1.g1",
    )
    assert fake.entities[base].tags == {"slashgate-generation": "1"}
    sent = [r.path.removeprefix("/_electric/entities").removesuffix("/send") for r in fake.sends()]
    assert sent == [base, fresh], "the server's tag, not the lost store, names the entity"


async def test_new_is_kept_by_the_store_when_the_server_refuses_the_tag(
    fake: FakeElectric, electric_gateway
):
    async with electric_gateway(store="memory") as server:
        await say(server, "before")
        (base,) = fake.entities
        fake.stop_entity(base)  # a stopped entity takes no tag (409 NOT_RUNNING)
        assert (await say(server, "/new"))["reply"]["text"] == "Started a new session."
        body = await say(server, "after")

    assert body["reply"]["text"] == "after"
    assert fake.entities[base].tags == {}
    assert fake.sends()[-1].path.endswith("/slashgate-webhook_3Ac1.g1/send")


async def test_a_foreign_generation_tag_is_ignored(fake: FakeElectric, electric_gateway):
    async with aiohttp.ClientSession() as http:
        async with http.put(
            f"{fake.url}/_electric/entities/{ENTITY_TYPE}/slashgate-webhook_3Ac1",
            json={"tags": {"slashgate-generation": "two"}},
        ) as response:
            assert response.status == 201
    async with electric_gateway() as server:
        body = await say(server, "hello")

    assert body["reply"]["text"] == "hello"
    assert fake.sends()[-1].path.endswith("/slashgate-webhook_3Ac1/send")


async def test_a_memory_store_that_forgets_costs_only_a_reread(
    fake: FakeElectric, electric_gateway
):
    settings = {"store": "memory", "memory_store_size": 2, "max_sessions": 1}
    async with electric_gateway(**settings) as server:
        await say(server, "learn standup", conversation="c1")
        await say(server, "/new", conversation="c1")
        assert (await say(server, "learn retro", conversation="c1"))["reply"]["text"] == (
            "Learned /retro."
        )
        for other in ("c2", "c3", "c4"):  # evict c1 from the core, then from the store
            await say(server, "hello", conversation=other)
        runtime = server.gateway.runtime
        assert isinstance(runtime, ElectricRuntime)
        assert await runtime.store.get(runtime.generation_key("webhook:c1")) is None
        fresh = fake.entities[f"/{ENTITY_TYPE}/slashgate-webhook_3Ac1.g1"]
        reads_before = len(fake.reads(fresh.stream.path))

        body = await say(server, "back again", conversation="c1")
        listed = await commands(server, conversation="c1")

    assert body["reply"]["text"] == "back again"  # nothing of the earlier replies
    assert fake.sends()[-1].path.endswith("/slashgate-webhook_3Ac1.g1/send")
    assert fake.reads(fresh.stream.path)[reads_before].query["offset"] == "-1"
    assert "retro" in listed and "standup" not in listed  # the fresh entity's own commands


async def test_existing_entity_is_reused_after_409(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        assert (await say(server, "first"))["reply"]["text"] == "first"
    async with electric_gateway() as server:  # memory store: nothing saved, the entity exists
        assert (await say(server, "second"))["reply"]["text"] == "second"

    puts = [r for r in fake.requests if r.method == "PUT"]
    assert len(puts) == 2 and len(fake.entities) == 1


async def test_emoji_in_spans_pass_the_server_validation(fake: FakeElectric, electric_gateway):
    text = "🚀 /deploy 👩‍👩‍👧 prod, see @file:src/😀.py and /pr-review 12 🎉"
    async with electric_gateway() as server:
        body = await say(server, text)

    assert body["reply"]["category"] is None
    (send,) = fake.sends()
    payload = send.body["payload"]
    assert composer_input_problems(payload) == []
    kinds = [(n["kind"], n["raw"]) for n in payload["nodes"]]
    assert ("file", "@file:src/😀.py") in kinds and ("slash_command", "/pr-review") in kinds
    assert payload["nodes"][-1]["end"] == utf16_len(text) != len(text)


async def test_two_messages_of_one_run_are_separated(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        body = await say(server, "two messages")

    assert body["reply"]["text"] == "First.\n\nSecond."


async def test_inventory_merges_the_type_list_into_the_menu(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        menu = {c.name: c for c in server.gateway.menu() or ()}
        inventory = await commands(server)

    assert menu["deploy"].source == "static" and menu["deploy"].hint == "<environment>"
    review = inventory["pr-review"]
    assert review["hint"] == "<number: number> [include_tests: boolean]"
    assert [a["name"] for a in review["arguments"]] == ["number", "include_tests"]
    assert {"help", "deploy", "pr-review"} <= set(inventory)


async def test_help_shows_every_hint_in_one_notation(fake: FakeElectric, electric_gateway):
    """``/learn <name>`` beside ``/deploy env [dry_run]: boolean``: two notations in one list."""
    async with electric_gateway() as server:
        shown = (await say(server, "/help"))["reply"]["text"]

    assert "- `/deploy <environment>` — Deploy a build" in shown
    assert "- `/pr-review <number: number> [include_tests: boolean]` — Review a pull" in shown


async def test_long_poll_mode(fake: FakeElectric, electric_gateway):
    async with electric_gateway(electric_live="long-poll") as server:
        await say(server, "warm up")
        await fake.until(lambda: fake.long_poll_timeouts >= 1)  # a 204 was answered
        body = await say(server, "after a timeout")

    assert body["reply"]["text"] == "after a timeout"
    reads = [r.query for r in fake.requests if r.path.endswith("/main")]
    assert reads[0] == {"offset": "-1"}
    assert {r.get("live") for r in reads[1:]} == {"long-poll"}


async def test_tool_calls_and_the_model_of_a_run(fake: FakeElectric, electric_gateway):
    async with electric_gateway() as server:
        events = await say_streaming(server, "use a tool")
        status = await say(server, "/status")

    tools = [data for event, data in events if event == "tool"]
    assert [(t["phase"], t["title"] if t["phase"] == "start" else None) for t in tools] == [
        ("start", "read_file"),
        ("running", None),
        ("end", None),
    ]
    assert tools[-1]["status"] == "completed" and tools[-1]["output"] == "12 lines"
    assert events[-1][1]["reply"]["text"] == "Read it."
    assert "**Model:** claude-x" in status["reply"]["text"]
