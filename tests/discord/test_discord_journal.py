"""The journal: an interaction accepted before a crash runs after the restart, its reply in
the same deferred response; what is kept rebuilds the same input.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from contract import Command
from tests.slack.slack_harness import Recorder

from .fake import fake_discord
from .harness import WAIT, discord_gateway
from .interactions import command

DEPLOY = (Command(name="deploy"),)


async def test_an_interaction_journaled_before_a_crash_is_answered_after_the_restart(
    gateway_server, tmp_path: Path, monkeypatch: Any
) -> None:
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    payload = command("agent", ("command", 3, "deploy prod"))
    async with fake_discord() as fake:
        async with discord_gateway(gateway_server, fake, Recorder(DEPLOY).runtime, **state) as h:
            # The process dies right after the journal write and the deferred answer.
            monkeypatch.setattr(h.channel.inputs, "spawn", lambda work: work.close())
            status, body = await h.interact(payload)
            assert (status, body["type"]) == (200, 5)
            [entry] = await h.server.gateway.journal.store.pending()
            assert entry.body == {"interaction": payload}
        monkeypatch.undo()
        assert payload["token"] not in fake.originals or not fake.originals[payload["token"]].edits
        recorder = Recorder(DEPLOY)
        async with discord_gateway(gateway_server, fake, recorder.runtime, **state) as h:
            await asyncio.wait_for(fake.edited.wait(), WAIT)  # recovered at start
            assert await h.server.gateway.journal.store.pending() == []
    assert recorder.sources == ["/deploy prod"]
    assert fake.originals[payload["token"]].content == "got: /deploy prod"


async def test_a_turn_cut_short_by_a_crash_ends_its_public_response_like_any_failure(
    gateway_server, tmp_path: Path, monkeypatch: Any
) -> None:
    """The restart notice edits the public response, as a timeout or an agent's failure
    does; it used to delete it and come as a message only the user saw.
    """
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    payload = command("agent", ("command", 3, "deploy prod"))
    async with fake_discord() as fake:
        async with discord_gateway(gateway_server, fake, Recorder(DEPLOY).runtime, **state) as h:
            monkeypatch.setattr(h.channel.inputs, "spawn", lambda work: work.close())
            await h.interact(payload)
            [entry] = await h.server.gateway.journal.store.pending()
            entry.state = "running"  # the process dies mid-turn
            await h.server.gateway.journal.mark(entry)
        monkeypatch.undo()
        recorder = Recorder(DEPLOY)
        async with discord_gateway(gateway_server, fake, recorder.runtime, **state) as h:
            await asyncio.wait_for(fake.edited.wait(), WAIT)  # was: deleted, then a follow-up
            [shown] = await h.replies(payload["token"])
    assert recorder.sources == []
    assert shown is fake.originals[payload["token"]] and not shown.ephemeral
    assert "failed: the gateway restarted while it was running" in shown.content
