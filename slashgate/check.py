"""``slashgate check``: the configuration is valid (it was loaded to get here), its unsafe
settings of the HTTP API are said (``warning:`` lines), each chat channel's access policy,
then the runtime, the state store and each configured platform are reached once. One line per
part; exit status 2 when ``slashgate serve`` would refuse to start (a configuration error, as
for ``serve``), else 1 when any part failed.
Then a ``warning:`` line for each other setting that leaves something open
(slashgate/safety.py), which fails nothing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from channels.webhook.exposure import assess
from channels.webhook.settings import WebhookSettings
from gateway.core import Gateway
from gateway.logs import Secrets, secrets_of
from gateway.runtimes import Runtime
from gateway.settings import CoreSettings
from gateway.state import StateStore, state_file, state_file_notice

from .guard import guard_warnings
from .registry import build_channels, settings_as
from .safety import unsafe_settings

TIMEOUT = 30.0  # seconds one part may take


async def check(settings: CoreSettings, runtime: Runtime) -> int:
    gateway = Gateway(settings, runtime)
    channels = build_channels(gateway, settings)
    secrets = Secrets(secrets_of(settings))
    names = ", ".join(c.name for c in channels)
    print(f"config: ok (runtime {settings.runtime}; channels {names})", flush=True)
    refused = _unsafe(settings)
    for name in gateway.access.chats:
        print(f"access {name}: {gateway.access.summary(name)}", flush=True)
        for warning in gateway.access.warnings(name):
            print(f"warning: {warning}", flush=True)
    parts: list[tuple[str, Callable[[], Awaitable[str]]]] = [
        (f"runtime {runtime.name}", lambda: _runtime(runtime)),
        (f"store {settings.store}", lambda: _store(settings, gateway.store)),
        *((channel.name, channel.check) for channel in channels),
    ]
    failed = False
    for name, reach in parts:
        try:
            detail = await asyncio.wait_for(reach(), TIMEOUT)
        except Exception as exc:
            failed = True
            problem = str(exc) if isinstance(exc, NotReady) else described(exc)
            print(f"{name}: FAILED: {secrets.mask(problem)}", flush=True)
        else:
            print(f"{name}: ok ({secrets.mask(detail)})", flush=True)
    for warning in filter(None, (state_file_notice(settings), *unsafe_settings(settings))):
        print(f"warning: {secrets.mask(warning)}", flush=True)
    return 2 if refused else 1 if failed else 0


def _unsafe(settings: CoreSettings) -> bool:
    """A ``warning:`` line for each unsafe setting of the HTTP API, and ``serve: FAILED``
    when ``slashgate serve`` would refuse to start (then True).
    """
    webhook = settings_as(WebhookSettings, settings)
    refusal, warning = assess(webhook)
    for line in filter(None, (warning, *guard_warnings(webhook))):
        print(f"warning: {line}", flush=True)
    if refusal is not None:
        print(f"serve: FAILED: cannot start: {refusal}", flush=True)
    return refusal is not None


class NotReady(Exception):
    """The part answered, and said it cannot work (the message says why)."""


def described(exc: BaseException) -> str:
    """``Type: message``, then its notes (the last lines an agent wrote to stderr, say)."""
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return "\n".join([said, *getattr(exc, "__notes__", ())])


async def _runtime(runtime: Runtime) -> str:
    """Started (an agent spawned, a server reached), asked whether it can open sessions."""
    await runtime.start()
    try:
        problem = await runtime.readiness()
    finally:
        await runtime.stop()
    if problem is not None:
        raise NotReady(problem)
    return runtime.describe()


async def _store(settings: CoreSettings, store: StateStore) -> str:
    """Opened, asked to answer, closed: nothing written. A SQLite file not made yet is left
    so (``slashgate serve`` makes it): its folder is checked instead.
    """
    if settings.store == "sqlite" and not (path := state_file(settings)).exists():
        return _to_be_made(path)
    await store.open()
    try:
        await store.ping()
    finally:
        await store.close()
    return f"{store.kind} store answers"


def _to_be_made(path: Path) -> str:
    """That ``slashgate serve`` can make ``path`` (and its folders), without making them."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise NotReady(f"{path} cannot be made: {folder} is not writable")
    return f"no state yet: {path} is made at the first start"
