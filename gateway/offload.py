"""Big inputs' contract work off the event loop (issue 10: no message blocks it 50 ms).

Classifying a long message and building its composer_input (its nodes, their UTF-16 offsets,
the strict lowering) is pure Python work linear in its size: about 30 ms for 1 MiB on this
machine.
Above ``THRESHOLD`` it runs in a worker thread, where the interpreter hands the GIL back to
the loop every switch interval (5 ms): the loop keeps serving while it runs. Below, a thread
would cost more than the work, and the work runs at once.

The same goes for the rest of a big message's pure work that needs no order (the embedded
runtime's copy and check of the payload, the webhook's answer): ``off_loop``.

The core takes a conversation's messages in the order they arrive; a message that waited for
a thread must not be overtaken by the next one of its conversation. So while a
conversation has work in a thread, its later messages wait their turn here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

THRESHOLD = 64 * 1024  # characters: about 2 ms of contract work

P = ParamSpec("P")
T = TypeVar("T")

# Per conversation, the last message whose work is under way (at most one entry per
# conversation with such work; removed when that work is done).
_last: dict[str, asyncio.Future[None]] = {}


def at_once(key: str, text: str) -> bool:
    """True when ``contract_work`` for ``text`` would run at once: short, and no earlier
    message of conversation ``key`` has work in a thread (then it may be called directly).
    """
    return len(text) < THRESHOLD and key not in _last


async def contract_work(
    key: str, text: str, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``work(*args, **kwargs)`` for a message of conversation ``key``: in a thread when
    ``text`` is long, after the work of the conversation's earlier messages.
    """
    if at_once(key, text):
        return work(*args, **kwargs)  # the usual case: no pass of the loop
    before = _last.get(key)
    done = _last[key] = asyncio.get_running_loop().create_future()
    try:
        if before is not None:
            await asyncio.shield(before)
        return await off_loop(len(text), work, *args, **kwargs)
    finally:
        done.set_result(None)
        if _last.get(key) is done:
            del _last[key]


async def off_loop(size: int, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)``: in a thread when ``size`` (characters of text it handles)
    is ``THRESHOLD`` or more, else at once (no pass of the loop).
    """
    if size < THRESHOLD:
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)
