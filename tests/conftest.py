"""Shared fixtures: settings that never touch the network, and an in-process gateway server."""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from contract import Classification, Command
from gateway.core import Gateway
from gateway.runtimes import Runtime
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext, InboxWake
from slashgate.config import Settings
from slashgate.server import Running, running
from tests import zygote
from tests.http import WORKSPACE
from tests.probe import Probe

# Every async test runs under the loop watchdog; pytester runs it in its own self-test.
pytest_plugins = ["tests.loop_watchdog", "pytester"]

ROOT = Path(__file__).resolve().parents[1]


# The runtimes and channels are imported when a server is built, before its port opens; the
# first imports of the ACP SDK and aiogram build pydantic models for seconds (aiogram 3 s of
# CPU). Paid before the tests, so that a test building a server on its loop is not taken for
# a blocked loop by the watchdog; not in pytest-xdist's controller, which runs no test.
_WARM = (
    "channels.slack.channel",
    "channels.telegram.channel",
    "channels.webchat.channel",
    "gateway.runtimes.acp.runtime",
    "gateway.runtimes.electric.runtime",
    "gateway.runtimes.pi.runtime",
)


def pytest_configure(config: pytest.Config) -> None:
    controller = "PYTEST_XDIST_WORKER" not in os.environ and config.getoption("numprocesses", None)
    if not controller:
        for module in _WARM:
            importlib.import_module(module)


@pytest.fixture(autouse=True)
def _logging_put_back() -> Iterator[None]:
    """A test that runs the CLI in-process (``main([...])``) configures the process's logging
    on the stderr pytest captured for that test, closed after it: a later test's log line
    then failed ("Logging error ... I/O operation on closed file"). Put back as it was.
    """
    root, ready = logging.getLogger(), logging.getLogger("slashgate.ready")
    saved = (root.handlers[:], root.level, ready.handlers[:], ready.level, ready.propagate)
    yield
    root.handlers[:], ready.handlers[:] = saved[0], saved[2]
    root.setLevel(saved[1])
    ready.setLevel(saved[3])
    ready.propagate = saved[4]


def pytest_sessionfinish() -> None:
    # Before the interpreter's exit: the zygote's CPU then counts as this process's children's.
    zygote.stop()


def pytest_report_header() -> list[str]:
    # slashgate reads .env where it starts, and many tests start it here (docs/testing.md).
    if (ROOT / ".env").is_file():
        return ["warning: .env in the repository: the gateways the tests start here read it"]
    return []


# The repository's own copy of the shared parity cases (tests/test_shared_copies.py).
PARITY = ROOT / "tests" / "parity" / "cases.jsonl"


def load_parity() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, cases) of tests/parity/cases.jsonl."""
    lines = [
        json.loads(line) for line in PARITY.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    return lines[0]["header"], lines[1:]


async def _parity_answer(ctx: HandlerContext) -> None:
    if isinstance(ctx.wake, InboxWake):
        await ctx.reply(f"runtime received: {ctx.wake.message.payload['source']}")


def parity_runtime() -> EmbeddedRuntime:
    """An embedded runtime with the parity header's inventory, replying with what it got."""
    inventory = tuple(Command(**c) for c in load_parity()[0]["inventory"])
    return EmbeddedRuntime(
        EntityDefinition(type="parity", handler=_parity_answer, slash_commands=inventory)
    )


def case_view(result: Classification, message: str | None) -> dict[str, Any]:
    """A classification and its user-facing text in the vocabulary of a parity case."""
    return {
        "kind": result.kind,
        "command": result.command,
        "typed": result.typed,
        "args": result.args,
        "for_other_bot": result.for_other_bot,
        "source": result.source,
        "message": message,
        "nodes": result.payload.model_dump(mode="json", exclude_none=True)["nodes"],
    }


CHAT_CHANNELS = ("telegram", "slack", "discord", "matrix")
# The channel tests predate the access policy: they talk as anyone, anywhere, as fast as they
# like. tests/access checks the policy itself from its real defaults (ACCESS_DEFAULTS).
OPEN_ACCESS: dict[str, Any] = {
    **{f"{c}_{p}": "open" for c in CHAT_CHANNELS for p in ("dm_policy", "group_policy")},
    "sender_rate": 0.0,
    "sender_max_queued": 0,
}
# The same for a gateway in a process of its own (SLASHGATE_* variables).
OPEN_ENV = {name: str(value) for name, value in OPEN_ACCESS.items()}
ACCESS_DEFAULTS: dict[str, Any] = {
    name: Settings.model_fields[name].get_default(call_default_factory=True) for name in OPEN_ACCESS
}


def make_settings(**overrides: Any) -> Settings:
    """Settings for tests: loopback, an ephemeral port, no environment leaking in."""
    # The defaults, not Settings(): a developer's SLASHGATE_* variables must not leak in.
    defaults = {
        name: field.get_default(call_default_factory=True)
        for name, field in Settings.model_fields.items()
    }
    base: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "inventory_wait": 2.0,
        "store": "memory",  # a test that wants durable state names its own file
        **OPEN_ACCESS,
        "workspace": WORKSPACE,  # an agent's folder, made when one starts: not in the checkout
    }
    return Settings.model_construct(**{**defaults, **base, **overrides})


ServerFactory = Callable[..., AbstractAsyncContextManager[Running]]


@pytest.fixture
def no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``SLASHGATE_*`` variable of the developer's environment reaches ``load_settings``."""
    for name in list(os.environ):
        if name.upper().startswith("SLASHGATE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def gateway_server() -> ServerFactory:
    """``async with gateway_server(runtime=None, **settings) as server:`` -> server.url etc."""

    @asynccontextmanager
    async def start(runtime: Runtime | None = None, **overrides: Any) -> AsyncIterator[Running]:
        async with running(make_settings(**overrides), runtime) as server:
            yield server

    return start


@pytest.fixture
async def probe_gateway() -> AsyncIterator[tuple[Gateway, Probe]]:
    """A started gateway (no channel) on the ``Probe`` runtime; stopped after the test."""
    probe = Probe()
    gateway = Gateway(make_settings(), probe.runtime())
    await gateway.start()
    yield gateway, probe
    probe.gate.set()
    await gateway.stop()
