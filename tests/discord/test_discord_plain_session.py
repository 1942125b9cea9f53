"""The Gateway session: a socket Discord closes is resumed by hikari and what came meanwhile
is replayed and answered; a plain message journaled before a crash is answered after the
restart; the gateway is not ready while the session is down.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp

from contract import Command
from tests.slack.slack_harness import Recorder

from .fake import fake_discord
from .harness import WAIT
from .plain_harness import DM, message_create, plain_gateway

DEPLOY = (Command(name="deploy"),)


async def readiness(url: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(url + "/readyz") as response:
        return response.status


async def test_a_dropped_socket_is_resumed_and_nothing_is_lost(gateway_server):
    recorder = Recorder(DEPLOY)
    async with plain_gateway(gateway_server, recorder.runtime) as p:
        await p.say(message_create("/deploy before"))
        assert await readiness(p.h.server.url) == 200
        await p.socket.drop()  # a resumable close code: hikari reconnects and resumes
        # hikari waits a second or more before it reconnects: the session is down until then.
        assert await readiness(p.h.server.url) == 503
        meanwhile = message_create("/deploy meanwhile")
        await p.send(meanwhile)  # sent on the resumed session, as Discord replays
        await p.answered(meanwhile)
        await p.say(message_create("/deploy after"))
        [resume] = p.socket.resumed
        identified = len(p.socket.identified)
        replies = [m.content for m in p.h.fake.posted[DM]]
    assert identified == 1  # one session, resumed
    assert resume["session_id"] == "session-1"
    assert recorder.sources == ["/deploy before", "/deploy meanwhile", "/deploy after"]
    assert replies == ["got: /deploy before", "got: /deploy meanwhile", "got: /deploy after"]


async def test_a_message_journaled_before_a_crash_is_answered_after_the_restart(
    gateway_server, tmp_path: Path, monkeypatch: Any
) -> None:
    state = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    data = message_create("/deploy prod")
    async with fake_discord() as fake:
        async with plain_gateway(gateway_server, Recorder(DEPLOY).runtime, fake, **state) as p:
            # The process dies right after the journal write.
            monkeypatch.setattr(p.h.channel.inputs, "spawn", lambda work: work.close())
            await p.send(data)
            assert await p.was_taken(data["id"])
            [entry] = await p.h.server.gateway.journal.store.pending()
        monkeypatch.undo()
        assert not fake.posted[DM]
        recorder = Recorder(DEPLOY)
        async with plain_gateway(gateway_server, recorder.runtime, fake, **state) as p:
            await asyncio.wait_for(fake.said.wait(), WAIT)  # recovered at start
            await p.h.channel.inputs.drain(WAIT)
            assert await p.h.server.gateway.journal.store.pending() == []
    assert entry.body["message"]["text"] == "/deploy prod"
    assert recorder.sources == ["/deploy prod"]
    assert [m.content for m in fake.posted[DM]] == ["got: /deploy prod"]
