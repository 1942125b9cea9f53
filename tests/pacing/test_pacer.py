"""The pacer alone: callers that leave while they wait take no slot and block no one (the
gateway must never freeze behind its own pacing), finals go before previews, a Retry-After
pauses its chat, and replicas share the global limit through a real Redis.

Durations here are lower bounds only (a sleep never ends early): a limit kept is a span at
least so long; a leak is a wait that would outlast the tests' generous timeouts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gateway.pacing import LocalBudget, Pacer, Rate, SharedBudget
from gateway.pacing.gate import Gate
from tests.pacing.redis import opened
from tests.redis_server import needs_redis, redis_server

GUARD = 30.0  # seconds: a frozen pacer fails here instead of hanging the run
OFF = Rate(0)


async def yield_until(condition: object) -> None:
    """Let the other tasks run until ``condition()`` holds (no clock involved)."""
    for _ in range(10_000):
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError("never happened")


async def test_callers_cancelled_anywhere_in_line_leak_no_slot_and_block_no_one() -> None:
    # 20 calls a second in each chat and overall: the 2,000 callers cancelled below would hold
    # the line for 100 seconds if each kept its slot or its turn.
    pacer = Pacer(LocalBudget(Rate(20)))
    lane = Rate(20)
    waiting = [
        asyncio.create_task(pacer.acquire(f"chat{i % 50}", lane, urgent=i % 3 == 0))
        for i in range(2000)
    ]
    await yield_until(lambda: pacer.waiting > 10)  # some in the global line, some in lanes
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    assert not pacer._busy  # no lane is left held
    for key in ("chat7", "someone new"):
        await asyncio.wait_for(pacer.acquire(key, lane), GUARD)
    await pacer.aclose()


async def test_a_burst_goes_at_once_then_one_call_an_interval() -> None:
    pacer = Pacer(LocalBudget(OFF))
    lane = Rate(2, 1.0, burst=3)  # a token every half second, three at once
    loop = asyncio.get_running_loop()
    start = loop.time()
    for _ in range(3):
        await asyncio.wait_for(pacer.acquire("chat", lane), GUARD)
    burst = loop.time() - start
    await asyncio.wait_for(pacer.acquire("chat", lane), GUARD)
    assert burst < lane.interval <= loop.time() - start


async def test_a_preview_leaves_the_reserve_to_final_replies() -> None:
    pacer = Pacer(LocalBudget(OFF))
    lane = Rate(1, 100.0, burst=3)  # three at once, then one in 100 s: a wait times out
    await asyncio.wait_for(pacer.acquire("chat", lane, urgent=False), GUARD)
    await asyncio.wait_for(pacer.acquire("chat", lane, urgent=False), GUARD)
    preview = asyncio.create_task(pacer.acquire("chat", lane, urgent=False))
    await yield_until(lambda: "chat" in pacer._busy)  # it waits: one token is kept
    final = asyncio.create_task(pacer.acquire("chat", lane))
    await asyncio.wait_for(final, GUARD)  # the kept token is the final's, at once
    assert not preview.done()
    preview.cancel()
    await asyncio.gather(preview, return_exceptions=True)


async def test_a_caller_cancelled_just_as_its_turn_came_hands_it_on() -> None:
    gate = Gate()
    entered: list[str] = []

    async def enter(name: str) -> None:
        await gate.enter(urgent=True)
        entered.append(name)
        gate.leave()

    await gate.enter(urgent=True)
    second = asyncio.create_task(enter("second"))
    third = asyncio.create_task(enter("third"))
    await yield_until(lambda: gate.waiting == 2)
    gate.leave()
    second.cancel()  # its turn was handed to it on leaving above; it has not run yet
    await asyncio.gather(second, return_exceptions=True)
    await asyncio.wait_for(third, GUARD)
    assert entered == ["third"]


async def test_a_preview_cancelled_in_the_global_line_leaves_no_turn_behind() -> None:
    pacer = Pacer(LocalBudget(Rate(20)))
    await pacer.acquire("first", OFF)  # the budget is spent for the next 50 ms
    head = asyncio.create_task(pacer.acquire("head", OFF))
    await yield_until(lambda: pacer._gate._busy)  # it waits for the budget, at the head
    preview = asyncio.create_task(pacer.acquire("preview", OFF, urgent=False))
    await yield_until(lambda: pacer.waiting == 1)
    preview.cancel()  # a preview stopped for its final reply, while in line
    await asyncio.gather(preview, return_exceptions=True)
    await asyncio.wait_for(head, GUARD)
    await asyncio.wait_for(pacer.acquire("next", OFF), GUARD)  # the line moves on


async def test_a_cancelled_preview_slot_does_not_hold_its_chat() -> None:
    pacer = Pacer(LocalBudget(OFF))
    lane = Rate(0.01)  # one call in 100 seconds: a second call would time out
    await pacer.acquire("chat", lane)
    preview = asyncio.create_task(pacer.slot("chat", lane).__aenter__())
    await yield_until(lambda: "chat" in pacer._busy)
    preview.cancel()
    await asyncio.gather(preview, return_exceptions=True)
    assert not pacer._busy
    other = asyncio.create_task(pacer.acquire("elsewhere", lane))
    await asyncio.wait_for(other, GUARD)  # another chat was never held up


async def test_a_final_reply_goes_before_every_preview_even_the_one_at_the_head() -> None:
    pacer = Pacer(LocalBudget(Rate(20)))
    done: list[str] = []

    async def call(key: str, urgent: bool) -> None:
        await pacer.acquire(key, OFF, urgent=urgent)
        done.append(key)

    await pacer.acquire("first", OFF)  # the budget is spent for the next 50 ms
    tasks = [asyncio.create_task(call(f"preview{i}", False)) for i in range(4)]
    await yield_until(lambda: pacer.waiting == 3)  # one at the head, three in line
    tasks.append(asyncio.create_task(call("final", True)))
    await asyncio.wait_for(asyncio.gather(*tasks), GUARD)
    # The preview at the head gave way, and kept its place among the previews.
    assert done == ["final", "preview0", "preview1", "preview2", "preview3"]


async def test_a_retry_after_pauses_its_chat_and_several_pause_the_bot() -> None:
    pacer = Pacer(LocalBudget(OFF))
    loop = asyncio.get_running_loop()
    done: list[str] = []

    async def call(key: str) -> None:
        await pacer.acquire(key, OFF)
        done.append(key)

    start = loop.time()
    pacer.pause("a", 0.3)
    await asyncio.wait_for(asyncio.gather(call("a"), call("b")), GUARD)
    assert done == ["b", "a"] and loop.time() - start >= 0.3
    pacer.pause("c", 0.3)
    pacer.pause("d", 0.3)
    pacer.pause("e", 0.3)  # three chats at once: the bot's own limit
    start = loop.time()
    await asyncio.wait_for(call("f"), GUARD)
    assert loop.time() - start >= 0.3


async def test_a_chat_paused_while_its_call_waits_for_the_budget_waits_out_the_pause() -> None:
    # The pause is looked for again once the call is through the global line: a 429 for its
    # chat may have come while it waited there.
    pacer = Pacer(LocalBudget(Rate(20)))
    loop = asyncio.get_running_loop()
    await pacer.acquire("first", OFF)  # the budget is spent for the next 50 ms
    call = asyncio.create_task(pacer.acquire("chat", OFF))
    await yield_until(lambda: pacer._gate._busy)  # it waits for the budget, at the head
    paused = loop.time()
    pacer.pause("chat", 0.3)
    await asyncio.wait_for(call, GUARD)
    assert loop.time() - paused >= 0.3


@needs_redis
async def test_two_replicas_share_the_global_limit_through_redis(tmp_path: Path) -> None:
    rate = Rate(50)  # 20 ms apart, whichever replica sends
    async with redis_server(tmp_path) as redis, opened(redis.url) as one, opened(redis.url) as two:
        replicas = [
            Pacer(SharedBudget(store, "slashgate:pacing:test", rate)) for store in (one, two)
        ]
        loop = asyncio.get_running_loop()
        sent: list[float] = []

        async def call(pacer: Pacer, key: str) -> None:
            await pacer.acquire(key, OFF)
            sent.append(loop.time())

        start = loop.time()
        calls = [call(pacer, f"chat{i}") for i in range(25) for pacer in replicas]
        await asyncio.wait_for(asyncio.gather(*calls), GUARD)
        # 50 calls: the last no sooner than 49 intervals after the first could go (each
        # replica alone would have sent its 25 in 24 intervals).
        assert max(sent) - start >= 49 * rate.interval * 0.99
        for pacer in replicas:
            await pacer.aclose()


@needs_redis
async def test_a_caller_cancelled_during_its_redis_reservation_freezes_no_one(
    tmp_path: Path,
) -> None:
    async with redis_server(tmp_path) as redis, opened(redis.url) as store:
        pacer = Pacer(SharedBudget(store, "slashgate:pacing:test", Rate(1000)))
        for _ in range(20):  # the head of the line is inside its Redis call when cancelled
            waiting = [asyncio.create_task(pacer.acquire(f"chat{i}", OFF)) for i in range(50)]
            await yield_until(lambda: pacer.waiting > 10)
            for task in waiting:
                task.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)
            await asyncio.wait_for(pacer.acquire("next", OFF), GUARD)
        await pacer.aclose()


@needs_redis
async def test_a_caller_cancelled_at_any_point_of_its_redis_reservation_ends_cancelled(
    tmp_path: Path,
) -> None:
    # The reservation's client must keep its caller's cancel: on Python 3.11 redis-py wrote a
    # command through asyncio.wait_for, which returned as if nothing happened when its caller
    # was cancelled just as the write completed. A preview that went on after its cancel
    # streamed forever, and the final reply, which waits for it to end, never went (the
    # replicas' test froze so). The budget now runs on the store's client (resp.py).
    async with redis_server(tmp_path) as redis, opened(redis.url) as store:
        budget = SharedBudget(store, "slashgate:pacing:test", Rate(100_000))
        await budget.prepare()
        pacer = Pacer(budget)
        cancelled = 0
        for turns in range(10_000):  # cancelled after 0, 1, 2... turns of the loop
            caller = asyncio.create_task(pacer.acquire("chat", OFF))
            for _ in range(turns):
                await asyncio.sleep(0)
            if not caller.cancel():
                break  # it went before its cancel: every await on its way was tried
            await asyncio.wait([caller], timeout=GUARD)
            assert caller.cancelled(), f"a cancel after {turns} turns was lost"
            cancelled += 1
        assert cancelled > 3  # the Redis call was among the awaits tried
        await pacer.aclose()


async def test_the_paused_chats_remembered_are_bounded_and_forgotten_once_over() -> None:
    pacer = Pacer(LocalBudget(OFF), size=4)
    pacer.pause("brief", 0.01)
    for i in range(10):  # a 429 storm across many chats
        pacer.pause(f"chat{i}", 0.2)
    assert list(pacer._pauses) == ["chat6", "chat7", "chat8", "chat9"]  # the oldest went
    await asyncio.wait_for(pacer.acquire("chat9", OFF), GUARD)  # read once over: forgotten
    assert "chat9" not in pacer._pauses


async def test_a_chat_paced_at_another_rate_while_busy_keeps_one_lane() -> None:
    pacer = Pacer(LocalBudget(OFF))
    pacer.pause("chat", 0.05)
    first = asyncio.create_task(pacer.acquire("chat", OFF))
    await yield_until(lambda: "chat" in pacer._busy)  # waiting out the pause in its lane
    second = asyncio.create_task(pacer.acquire("chat", Rate(10)))
    done = await asyncio.wait_for(asyncio.gather(first, second, return_exceptions=True), GUARD)
    assert done == [None, None]  # neither release failed
    assert not pacer._busy
