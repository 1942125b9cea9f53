"""A process that writes access records as the gateway does, then waits to be killed (the
durability tests SIGKILL it): ``python -m tests.access.writer STATE_PATH``. On the SQLite
file given, it pairs and approves sender 41 (``/pair``'s way: the channel's first owner),
gives sender 42 a pairing code, and prints ``approved 41`` and ``code <42's code>``.
"""

from __future__ import annotations

import asyncio
import sys

from gateway.access import Access, Pairing, Policy
from gateway.inbound import InboundMessage
from gateway.metrics import Metrics
from gateway.settings import CoreSettings
from gateway.state import open_store
from tests.access.recording import pairing_code

POLICY = Policy(chat=True)  # the defaults: pairing


def direct(user: str) -> InboundMessage:
    return InboundMessage("telegram", user, user, "hello", direct=True)


async def code_of(access: Access, user: str) -> str:
    asked = await access.admit(direct(user), POLICY)
    assert isinstance(asked, Pairing), asked
    return pairing_code(asked.text)


async def main(path: str) -> None:
    settings = CoreSettings(store="sqlite", state_path=path)
    store = open_store(settings)
    await store.open()
    access = Access(settings, store, Metrics())
    access.configure("telegram", POLICY)
    said = await access.approve("telegram", await code_of(access, "41"))
    assert said.startswith("Approved 41"), said
    print("approved 41", flush=True)
    print("code", await code_of(access, "42"), flush=True)
    await asyncio.Event().wait()  # the store stays open: no clean close ever comes


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
