"""What an operator tries first: ``kill -9`` the gateway on its default SQLite store, start it
again, and find everything where it was: dynamic commands, Idempotency-Key answers, and a
turn that was running told to its user.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp

from tests.http import read_events
from tests.reliability.gateway_process import GatewayProcess


@asynccontextmanager
async def gateway(tmp_path: Path) -> AsyncIterator[GatewayProcess]:
    """A gateway on one SQLite file, stopped at the end whatever the test found."""
    process = GatewayProcess(
        {"state_path": str(tmp_path / "state.sqlite3"), "log_level": "WARNING", "webchat": "false"}
    )
    try:
        yield process
    finally:
        await process.kill()


async def post(
    http: aiohttp.ClientSession, url: str, text: str, key: str | None = None
) -> tuple[dict[str, Any], bool]:
    """(the answer, whether it was a replay)."""
    headers = {"Idempotency-Key": key} if key else {}
    body = {"conversation": "c1", "user": "me", "text": text}
    async with http.post(f"{url}/v1/messages", json=body, headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json(), resp.headers.get("Idempotent-Replayed") == "true"


async def test_dynamic_commands_and_idempotent_answers_survive_kill_9(tmp_path: Path):
    async with gateway(tmp_path) as process, aiohttp.ClientSession() as http:
        url = await process.start()
        remembered, _ = await post(http, url, "/remember hi Hello there!")
        assert remembered["reply"]["text"] == "Remembered /hi."
        first, replayed = await post(http, url, "/echo one", key="k1")
        assert first["reply"]["text"] == "one" and not replayed
        await process.kill()

        url = await process.start()
        hi, _ = await post(http, url, "/hi")
        assert hi["classification"]["kind"] == "supported"
        assert hi["reply"]["text"] == "Hello there!"
        again, replayed = await post(http, url, "/echo one", key="k1")
        assert replayed and again == first  # the stored answer: nothing ran a second time
        forgot, _ = await post(http, url, "/forget hi")
        assert forgot["reply"]["text"] == "Forgot /hi."
        await process.kill()

        url = await process.start()
        gone, _ = await post(http, url, "/hi")
        assert gone["classification"]["kind"] == "unsupported"
        await process.stop()


async def test_a_turn_running_at_kill_9_gets_one_restart_notice_for_its_key(tmp_path: Path):
    async with gateway(tmp_path) as process, aiohttp.ClientSession() as http:
        url = await process.start()
        body = {"conversation": "c1", "user": "me", "text": "/slow 30"}
        headers = {"Idempotency-Key": "slow-1", "Accept": "text/event-stream"}
        async with http.post(f"{url}/v1/messages", json=body, headers=headers) as resp:
            events = read_events(resp)
            kind, _ = await asyncio.wait_for(anext(events), 30)
            assert kind == "accepted"
            kind, _ = await asyncio.wait_for(anext(events), 30)
            assert kind == "delta"  # the turn runs: the first second has gone by
            await process.kill()

        url = await process.start()
        # The client retries with its key: the answer is the restart notice, once.
        answer, replayed = await post(http, url, "/slow 30", key="slow-1")
        assert replayed
        assert answer["reply"]["category"] == "generic"
        assert "restarted while it was running" in answer["reply"]["text"]
        assert answer["reply"]["text"].startswith("Slash command /slow failed")
        fresh, _ = await post(http, url, "/echo still here")
        assert fresh["reply"]["text"] == "still here"
        await process.stop()
