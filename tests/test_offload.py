"""Contract work of big inputs runs in a thread, and a conversation's messages keep their
order around it."""

from __future__ import annotations

import asyncio
import threading

from gateway import offload

BIG = "x" * offload.THRESHOLD


async def test_small_work_runs_at_once_on_the_loop() -> None:
    work = offload.contract_work("c", "hi", threading.get_ident)
    try:
        work.send(None)  # runs to its end without waiting for anything
    except StopIteration as end:
        assert end.value == threading.get_ident()
    else:
        raise AssertionError("small work waited for the loop")


async def test_big_work_runs_in_a_thread() -> None:
    assert await offload.contract_work("c", BIG, threading.get_ident) != threading.get_ident()


async def test_a_later_message_of_the_conversation_waits_for_the_big_one() -> None:
    order: list[str] = []
    release = threading.Event()

    def big() -> str:
        release.wait(10)
        order.append("big")
        return "big"

    first = asyncio.ensure_future(offload.contract_work("c", BIG, big))
    await asyncio.sleep(0)  # the big one is in its thread
    second = asyncio.ensure_future(offload.contract_work("c", "small", order.append, "small"))
    other = asyncio.ensure_future(offload.contract_work("d", "other", order.append, "other"))
    await asyncio.sleep(0)
    assert other.done() and not second.done()  # another conversation does not wait
    release.set()
    assert await first == "big"
    await second
    assert order == ["other", "big", "small"]
    assert offload._last == {}
