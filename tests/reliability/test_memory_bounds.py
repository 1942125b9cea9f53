"""What the process holds stays within its bounds however many conversations have commands of
their own (issue 21, defect 11): each such conversation used to keep a slash contract (its
indexes) of its own, a few KiB for every one of ``max_sessions``.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from contract import SlashContract
from gateway.contracts import SHARED_CONTRACTS, _shared_contract
from gateway.core import Gateway
from gateway.inbound import InboundMessage
from slashgate.config import Settings
from slashgate.registry import build_runtime

CONVERSATIONS = SHARED_CONTRACTS + 150


def contracts_alive() -> int:
    gc.collect()
    return sum(isinstance(o, SlashContract) for o in gc.get_objects())


@pytest.mark.blocks_loop(30, reason="counts every object of the test process, on its loop")
async def test_conversations_with_commands_of_their_own_share_a_bounded_set_of_contracts(
    tmp_path: Path,
):
    settings = Settings(
        state_path=tmp_path / "state.sqlite3", max_sessions=CONVERSATIONS, log_level="WARNING"
    )
    gateway = Gateway(settings, build_runtime(settings))
    # Earlier tests in this process may leave contracts alive, in the shared cache or of
    # their own: the cache starts empty, and what else lives is counted before.
    _shared_contract.cache_clear()
    before = contracts_alive()
    await gateway.start()
    try:
        for n in range(CONVERSATIONS):
            key = f"c{n}"
            await gateway.handle(InboundMessage("webhook", key, "u", f"/remember hi hello {n}"))
            reply = (await gateway.handle(InboundMessage("webhook", key, "u", "/hi"))).reply
            assert reply is not None and reply.text == f"hello {n}"
        # The shared cache's and this gateway's base and host contracts, nothing more.
        assert contracts_alive() - before <= SHARED_CONTRACTS + 2
        # A conversation whose contract left the cache still classifies its own commands.
        reply = (await gateway.handle(InboundMessage("webhook", "c0", "u", "/hi"))).reply
        assert reply is not None and reply.text == "hello 0"
    finally:
        await gateway.stop()
