"""The Electric Agents runtime: one entity per conversation on an Electric Agents server."""

from __future__ import annotations

import logging
import re
import time
import weakref

from contract import Command

from ...events import SessionUpdated
from ...metrics import StoreObserver
from ...state import MemoryStore, StateStore, TimedStore, open_store, store_problem
from ..base import AgentInfo, Runtime, RuntimeSession, UpdateListener
from .client import REQUEST_ERRORS, ElectricClient
from .failures import StreamFailures
from .host import Declares
from .ids import check_prefix
from .session import ElectricSession
from .settings import ElectricSettings
from .wire import ElectricError

log = logging.getLogger("slashgate.electric")

# Seconds: the type's command list is read again at most this often (besides every open of
# a conversation), when a turn starts or an input names a command the list lacks.
TYPE_REFRESH = 10.0

# principal.ts: `<kind>:<id>`, kind one of four, id non-empty without "/".
_PRINCIPAL = re.compile(r"(user|agent|service|system):[^/\s]+")


class ElectricRuntime(Runtime):
    name = "electric"
    strict_names = True  # the server answers 422 to slash_command names outside STRICT_NAME

    def __init__(self, settings: ElectricSettings, store: StateStore | None = None) -> None:
        self.settings = settings
        self.prefix = check_prefix(settings.electric_id_prefix)
        self.entity_type = settings.electric_entity_type
        self.live = settings.electric_live
        principal = settings.electric_principal
        if principal is not None and not _PRINCIPAL.fullmatch(principal):
            raise ValueError(
                f"electric_principal {principal!r} must be <user|agent|service|system>:<id> "
                "with no '/' in the id"
            )
        self.client = ElectricClient(settings.electric_url, principal)
        self.failures = StreamFailures(self.client.shown)
        self.store = store or open_store(settings)
        self._owns_store = store is None
        self._volatile = isinstance(self.store, MemoryStore)  # also once timed (observe_store)
        self.static: tuple[Command, ...] | None = None  # the type's list, as last read
        self.type_refresh = TYPE_REFRESH
        self.clock = time.monotonic
        self._static_read: float | None = None  # ``clock`` time the last read began
        # Open conversations: each gets a change of the type's list.
        self.sessions: weakref.WeakSet[Declares] = weakref.WeakSet()

    async def start(self) -> None:
        await self.store.open()
        await self.client.start()
        if self._volatile:
            log.warning(
                'state store in memory (store = "memory"): after a restart, or once it forgot '
                "a conversation, every stream is read again from its start"
            )

    async def stop(self) -> None:
        await self.client.close()
        if self._owns_store:
            await self.store.close()

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        session = ElectricSession(self, key, updates)
        try:
            await session.ensure()
        except REQUEST_ERRORS as exc:
            # The first turn tries again and tells the user why it cannot run; meanwhile the
            # type's commands still classify as commands (not as unknown ones).
            log.warning("cannot open the entity for %s yet: %s", key, exc)
            if self.static is not None:
                updates(SessionUpdated(commands=self.static))
        return session

    def observe_store(self, observe: StoreObserver) -> None:
        self.store = TimedStore(self.store, observe)

    async def readiness(self) -> str | None:
        try:
            await self.client.entity_type(self.entity_type)
        except ElectricError as exc:
            return f"{self.client.shown} answered {exc}"
        except REQUEST_ERRORS as exc:
            return f"{self.client.shown} does not answer: {type(exc).__name__}: {exc}"
        return await store_problem(self.store)

    def generation_key(self, key: str) -> str:
        return f"electric:generation:{self.prefix}:{key}"

    async def declared(self, fresh: bool = False) -> tuple[Command, ...] | None:
        """The type's command list, read again when ``fresh`` or once ``type_refresh``
        seconds have passed since the last read began (so a burst of callers, or of typos,
        costs one read). A change goes to every open conversation. Raises REQUEST_ERRORS.
        """
        last = self._static_read
        if not fresh and last is not None and self.clock() - last < self.type_refresh:
            return self.static
        self._static_read = self.clock()
        entity_type = await self.client.entity_type(self.entity_type)
        static = tuple(c.command() for c in entity_type.slash_commands or ())
        if static != self.static:
            self.static = static
            for session in list(self.sessions):
                session.declare(static)
        return static

    async def static_commands(self) -> tuple[Command, ...] | None:
        try:
            return await self.declared(fresh=True)
        except ElectricError as exc:
            log.error(
                "cannot read the entity type %s at %s: %s; every input fails until this is fixed",
                self.entity_type,
                self.client.shown,
                exc.describe(),
            )
        except REQUEST_ERRORS as exc:
            log.warning(
                "electric runtime unreachable at %s (%s): check electric_url and that the "
                "Electric Agents server runs; inputs fail until it answers",
                self.client.shown,
                exc,
            )
        return None

    def agent_info(self) -> AgentInfo:
        return AgentInfo(self.entity_type, self.name)

    def describe(self) -> str:
        return f"electric ({self.client.shown}, entity type {self.entity_type})"
