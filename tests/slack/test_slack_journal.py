"""What the journal keeps of a Slack input rebuilds it after a restart, and no more."""

from __future__ import annotations

import asyncio

from contract import Command
from tests.slack.slack_fake import TEAM, WAIT, fake_slack, mention
from tests.slack.slack_harness import Held, ScriptedRuntime, slack_gateway


async def test_a_journaled_command_and_mention_rebuild_the_same_input(gateway_server):
    held = Held()
    runtime = ScriptedRuntime(held, (Command(name="deploy"),))
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime) as h:
        await h.slack.command(
            "/agent", "deploy prod", channel="C1", response_url=fake.response_url("r")
        )
        await h.slack.event(mention("hello <@U2|bob>", channel="C2", ts="500.1"))
        entries = await h.server.gateway.journal.store.pending()  # journaled before the acks
        rebuilt = {}
        for entry in entries:
            found = await h.channel.recovered(entry)
            assert found is not None
            message, sink = found
            rebuilt[message.conversation] = (message, sink.target)
            await sink.aclose()
        held.release.set()
        await asyncio.wait_for(h.channel.drain(WAIT), WAIT)
    command, target = rebuilt["C1"]
    assert (command.user, command.text, command.meta) == ("U1", "/deploy prod", {"team": TEAM})
    assert command.message_id is not None
    assert (target.response_url, target.invocation) == (
        fake.response_url("r"),
        "/agent deploy prod",
    )
    said, target = rebuilt["C2:500.1"]
    assert (said.user, said.text, said.message_id, said.meta) == (
        "U1",
        "hello @bob",
        "500.1",
        {"team": TEAM},
    )
    assert (target.thread_ts, target.message_ts) == ("500.1", "500.1")
    # Slack's legacy verification token is none of the journal's business.
    kept = [entry.body.get("command") or entry.body["body"] for entry in entries]
    assert len(kept) == 2 and all("token" not in fields for fields in kept)
