"""SIGKILL the gateway at random points of Telegram turns, again and again, on one SQLite file:
every update Telegram saw acknowledged gets exactly one final reply or one restart notice.

Telegram is modelled as it behaves: an update is delivered until the webhook answers 200 (the
test delivers again what was not acknowledged, after each restart), and a sendMessage that
never fully arrived (the gateway died while sending it) leaves no message. Kills land before
the acknowledgement, between it and the turn, mid-turn (``/slow 1`` streams for a second),
after the reply is made and while it is being sent.

Each life costs a gateway start (seconds of CPU, most of it aiogram's import), so make test
kills 6 lives; ``make test-long`` (or FAULT_CYCLES) kills more of them, the same way.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.conftest import OPEN_ENV
from tests.reliability.gateway_process import GatewayProcess
from tests.telegram.fake_bot_api import TOKEN, FakeBotAPI
from tests.telegram.helpers import message_update

SECRET = "fault-secret-0123456789"
CYCLES = int(os.environ.get("FAULT_CYCLES", "6"))
NEW_PER_CYCLE = 14
RESTARTED = "restarted"
# A reply Telegram took shortly before a kill may be sent again: the gateway died between
# Telegram's answer and writing it down (the one window the Bot API leaves open: sendMessage
# has no idempotency key). Milliseconds on a quiet machine; the bound allows for a loaded one.
IN_FLIGHT = 0.5


@dataclass
class Run:
    update: dict[str, Any]
    chat: int
    expected: str  # the reply when the turn runs to its end
    acknowledged: bool = False


async def deliver(http: aiohttp.ClientSession, url: str, run: Run) -> None:
    """One delivery attempt, as Telegram makes it; acknowledged on 200 only."""
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    try:
        async with http.post(f"{url}/telegram/webhook", json=run.update, headers=headers) as resp:
            if resp.status == 200:
                run.acknowledged = True
    except (TimeoutError, aiohttp.ClientError):
        pass  # the gateway died meanwhile: Telegram delivers again later


async def test_sigkill_at_any_point_of_a_turn_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path,
):
    seed = int(os.environ.get("FAULT_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    kills: list[float] = []
    async with FakeBotAPI() as fake, aiohttp.ClientSession() as http:
        # Sending takes a little while, so that kills land mid-delivery too.
        fake.latency = lambda method: rng.uniform(0, 0.03) if method == "sendMessage" else 0.0
        gateway = GatewayProcess(
            {
                "telegram_token": TOKEN,
                "telegram_secret": SECRET,
                "telegram_api_base": fake.url,
                "store": "sqlite",
                "state_path": str(tmp_path / "state.sqlite3"),
                "inventory_wait": "0",
                "log_level": "INFO",
                **OPEN_ENV,
            }
        )
        runs: list[Run] = []
        for cycle in range(CYCLES + 1):
            url = await gateway.start()
            waiting = [r for r in runs if not r.acknowledged]  # Telegram delivers these again
            for _ in range(NEW_PER_CYCLE if cycle < CYCLES else 0):
                chat = 1000 + len(runs)
                slow = rng.random() < 0.4
                text, expected = (
                    ("/slow 1", "1/1\ndone") if slow else (f"/echo m{chat}", f"m{chat}")
                )
                run = Run(message_update(chat, text, update_id=chat), chat, expected)
                runs.append(run)
                waiting.append(run)

            async def traffic(batch: list[Run] = waiting, at: str = url) -> None:
                for run in batch:
                    await deliver(http, at, run)
                    await asyncio.sleep(rng.uniform(0, 0.08))

            sending = asyncio.ensure_future(traffic())
            if cycle == CYCLES:  # the last life: no kill, everything must come out
                await sending
                break
            await asyncio.sleep(rng.uniform(0, 1.4))
            kills.append(time.monotonic())
            await gateway.kill()
            await asyncio.gather(sending, return_exceptions=True)

        def answered(run: Run) -> bool:
            return bool(fake.messages(run.chat))

        acknowledged = [r for r in runs if r.acknowledged]
        try:
            await asyncio.wait_for(_until(fake, lambda: all(answered(r) for r in acknowledged)), 60)
        finally:
            await gateway.stop()

    logged = "".join(
        line for line in gateway.output if any(w in line for w in ("WARNING", "ERROR", "journal"))
    )
    assert len(acknowledged) == len(runs), "the last life acknowledges every update"
    notices = completed = 0
    resent: list[float] = []  # for each reply sent twice: from Telegram taking it to the kill
    for run in runs:
        texts = fake.texts(run.chat)
        assert texts, f"chat {run.chat} never got an answer (seed {seed})"
        first = texts[0]
        assert first == run.expected or RESTARTED in first, (run.chat, texts, seed)
        if RESTARTED in first:
            notices += 1
        else:
            completed += 1
        if len(texts) > 1:
            # Only the same answer again, and only when a kill came right after Telegram took it.
            taken = next(c.at for c in fake.calls_to("sendMessage") if _chat(c) == run.chat)
            # The kill is stamped just before SIGKILL lands: a send may come right after it.
            gap = min((abs(k - taken) for k in kills), default=float("inf"))
            assert len(set(texts)) == 1, (run.chat, texts, seed)
            sends = [c.at for c in fake.calls_to("sendMessage") if _chat(c) == run.chat]
            assert gap <= IN_FLIGHT, (run.chat, texts, gap, sends, kills, seed, logged[-4000:])
            resent.append(gap)
    print(
        f"\nfault runs: {len(runs)} inputs, {len(kills)} SIGKILLs, {completed} replies, "
        f"{notices} restart notices, {len(resent)} sent twice in the in-flight window "
        f"(at most {max(resent, default=0) * 1000:.0f} ms before a kill; seed {seed})"
    )
    # Every life but the last was killed, with turns cut mid-way as well as turns completed.
    assert len(kills) == CYCLES >= 6 and notices and completed


def _chat(call: Any) -> int:
    return int(call.params["chat_id"])


async def _until(fake: FakeBotAPI, predicate: Any) -> None:
    async with fake._changed:
        await fake._changed.wait_for(predicate)
