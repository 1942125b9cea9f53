"""Fixtures of the Matrix tests: one real Synapse for the session, its accounts, a person
talking through mautrix, and the gateway with the Matrix channel signed in as the bot.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from channels.matrix.channel import MatrixChannel
from gateway.api import Runtime
from gateway.inbound import InboundMessage, Outcome

from .person import WAIT, Person, person
from .synapse import Synapse, why_no_synapse

BOT = "gw_bot"  # the parity header's bot_username: `/deploy@gw_bot` is for this bot


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Synapse]:
    why = why_no_synapse()
    if why is not None:
        pytest.skip(why)
    server = Synapse(Path(tmp_path_factory.mktemp("synapse")))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bot_crypto(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bot's encryption store, one for the session: every gateway a test starts is the
    same bot device (its access token's), which keeps its keys across restarts.
    """
    return Path(tmp_path_factory.mktemp("bot-crypto")) / "crypto.sqlite3"


@pytest.fixture
async def alice(synapse: Synapse) -> AsyncIterator[Person]:
    async with person(synapse.url, synapse.account("alice")) as who:
        yield who


@pytest.fixture
def bot_id(synapse: Synapse) -> str:
    return synapse.account(BOT).user_id


Served = Any  # the running server (tests/conftest.py's Running)
Start = Callable[..., AbstractAsyncContextManager[Served]]


def channel_of(served: Served) -> MatrixChannel:
    [channel] = [c for c in served.channels if isinstance(c, MatrixChannel)]
    return channel


def publishing(served: Served) -> MatrixChannel:
    """The channel, publishing each room's commands without the debounce's second and
    looking at the owners often: a test waits for each list.
    """
    channel = channel_of(served)
    assert channel.publisher is not None
    channel.publisher.debounce = 0.05
    channel.roles.every = 0.1
    return channel


@pytest.fixture
def matrix(gateway_server: Any, synapse: Synapse, bot_crypto: Path) -> Start:
    """``async with matrix(runtime=None, **settings) as served:`` the gateway with the Matrix
    channel signed in as the bot, past its first sync (what comes after it is answered).
    """
    account = synapse.account(BOT)

    @asynccontextmanager
    async def start(runtime: Runtime | None = None, **overrides: Any) -> AsyncIterator[Served]:
        settings = {
            "matrix_homeserver": synapse.url,
            "matrix_access_token": SecretStr(account.token),
            "matrix_edit_interval": 0.2,
            "matrix_crypto_path": bot_crypto,
            **overrides,
        }
        async with gateway_server(runtime, **settings) as served:
            channel = channel_of(served)
            assert channel.sync is not None
            async with asyncio.timeout(WAIT):
                await channel.sync.synced.wait()
            yield served

    return start


class Outcomes:
    """The gateway's outcome for each Matrix input, by its event id."""

    def __init__(self, gateway: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: dict[str, tuple[InboundMessage, Outcome]] = {}
        self.changed = asyncio.Condition()
        handle = gateway.handle

        async def spy(message: InboundMessage, sink: Any = None, entry: Any = None) -> Outcome:
            outcome = await handle(message, sink, entry)
            if message.channel == "matrix" and message.message_id is not None:
                self.seen[message.message_id] = (message, outcome)
                async with self.changed:
                    self.changed.notify_all()
            return outcome

        monkeypatch.setattr(gateway, "handle", spy)

    async def of(self, event_id: str) -> tuple[InboundMessage, Outcome]:
        async with asyncio.timeout(WAIT), self.changed:
            await self.changed.wait_for(lambda: event_id in self.seen)
        return self.seen[event_id]
