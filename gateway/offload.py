"""Big inputs' contract work off the event loop (issue 10: no message blocks it 50 ms).

Building the composer_input of a long message (its nodes, their UTF-16 offsets, the strict
lowering) is pure Python work linear in its size: about 30 ms for 1 MiB on this machine.
Above ``THRESHOLD`` it runs in a worker thread, where the interpreter hands the GIL back to
the loop every switch interval (5 ms): the loop keeps serving while it runs. Below, a thread
would cost more than the work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

THRESHOLD = 64 * 1024  # characters: about 2 ms of contract work

P = ParamSpec("P")
T = TypeVar("T")


async def contract_work(text: str, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)``, in a thread when ``text`` is long."""
    if len(text) < THRESHOLD:
        return work(*args, **kwargs)
    return await asyncio.to_thread(work, *args, **kwargs)
