"""The gateway: the stages an input flows through, one way, composed once (see
docs/architecture.md): intake -> routing -> run -> delivery, with the conversations and their
sessions, the inventory (menus) and recovery beside them. ``Gateway`` implements the channels'
API, ``gateway.api.GatewayAPI``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from contract import Catalog, Category, Command

from .access import Access
from .answering import Answering
from .arrivals import Arrivals
from .busy import Busy
from .contracts import Contracts
from .conversation import Conversation
from .delivery import Delivery
from .host import RESERVED, Labeler, host_commands
from .host_handlers import HostTools
from .inbound import InboundMessage, Reply
from .intake import Intake
from .inventory import hygienic
from .journal import Journal, replica_name
from .menus import Menus
from .metrics import Metrics
from .recovery import Recovery
from .routing import Router
from .run import SHUTTING_DOWN, Runs
from .runtimes.base import AgentInfo, Runtime, SessionInfo
from .sessions import Conversations
from .settings import CoreSettings
from .state import StateStore, TimedStore, open_store
from .stopping import Stopper
from .tasks import BackgroundTasks
from .withdrawals import Withdrawals


class Gateway:
    def __init__(
        self, settings: CoreSettings, runtime: Runtime, store: StateStore | None = None
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.metrics = Metrics()
        self.store = TimedStore(store or open_store(settings), self.metrics.store_observer("state"))
        self.journal = Journal(
            self.store, replica_name(settings.replica_id), settings.dedupe_ttl, settings.lease_ttl
        )
        self._background = BackgroundTasks()
        self._menus = menus = Menus(self._background)
        self._contracts = contracts = Contracts(settings, runtime, menus)
        self._conversations = conversations = Conversations(
            settings, runtime, self.metrics, self._background, contracts, menus.conversation_changed
        )
        delivery = Delivery()
        stopper = Stopper(settings)
        runs = Runs(
            settings,
            runtime,
            self.metrics,
            self.journal,
            self._background,
            conversations,
            contracts,
            delivery,
            stopper,
        )
        self.access = access = Access(settings, self.store, self.metrics)
        tools = HostTools(menus, stopper, self.journal, runtime, access)
        arrivals = Arrivals()
        busy = Busy(settings, self.journal, contracts, arrivals, stopper, delivery, runs)
        router = Router(contracts, conversations, delivery, tools, arrivals, busy)
        intake = Intake(
            self.journal, self.metrics, contracts, conversations, router, delivery, access, arrivals
        )
        # The one owner of an input's life: its place, its answer once, the journal's end.
        withdrawals = Withdrawals()
        answering = Answering(
            self.journal, arrivals, contracts, delivery, withdrawals, intake.handle
        )
        self._recovery = Recovery(
            settings,
            self.journal,
            self._background,
            conversations,
            contracts,
            answering,
            stopper,
            delivery,
        )
        # The channels' API is the stages' own methods: no call in between on the hot path.
        self.accept = intake.accept
        self.claim = intake.claim
        self.done = answering.done
        self.lead = self.journal.lead
        self.handle = answering.handle
        self.withdraw = withdrawals.withdraw
        self.classify = router.classify
        self.preview = router.preview
        self.stop_run = stopper.stop_run
        self.subscribe = menus.subscribe
        self.subscribe_conversation = menus.subscribe_conversation
        self.menu = menus.menu
        self.recoverable = self._recovery.recoverable
        self.recover = self._recovery.recover
        self.metrics.watch(conversations.queued, conversations.running)
        runtime.observe_store(self.metrics.store_observer("runtime"))

    @property
    def catalog(self) -> Catalog:
        return self._contracts.catalog

    @property
    def inventory(self) -> tuple[Command, ...] | None:
        """The latest runtime inventory seen; None until the runtime reported one."""
        return self._menus.inventory

    @property
    def agent(self) -> AgentInfo:
        """The agent behind the runtime, as a person would call it (greetings)."""
        return self.runtime.agent_info()

    @property
    def closing(self) -> bool:
        """Shutting down: new input is refused."""
        return self._conversations.closing

    @property
    def shared(self) -> bool:
        """Replicas share the store: one-replica work goes under ``lead``."""
        return self.journal.shared

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.open()
        await self.store.ping()
        if self.journal.shared:
            await self.journal.beat()
        self.runtime.use_store(self.store)
        await self.runtime.start()
        static = await self.runtime.static_commands()
        if static is not None:
            self._menus.changed(hygienic(static, RESERVED)[0])

    async def readiness(self) -> str | None:
        """None when the runtime can open sessions now; else why not (``GET /readyz``)."""
        if self.closing:
            return SHUTTING_DOWN
        return await self.runtime.readiness()

    async def stop_runs(self) -> None:
        """Shutting down: refuse new input and cancel every running turn, so that each user
        gets the cancelled reply while the channels can still deliver it.
        """
        self._conversations.close()
        await asyncio.gather(*(self.stop_run(c) for c in list(self._conversations.values())))

    async def stop_turns(self, channel: str, where: Callable[[str], bool]) -> int:
        """Stop the turns running in ``channel``'s conversations that ``where`` names (by
        conversation id): the bot was removed from where they would answer. How many ran.
        """
        prefix = f"{channel}:"
        convs = [
            conv
            for key, conv in self._conversations.items()
            if key.startswith(prefix) and where(key.removeprefix(prefix))
        ]
        return sum(await asyncio.gather(*(self.stop_run(c) for c in convs)))

    async def stop(self) -> None:
        self._conversations.close()
        self._recovery.stop()
        conversations = self._conversations.forget_all()
        # All at once: one stuck conversation must not hold up the others' shutdown.
        await asyncio.gather(*(self._close(conv) for conv in conversations))
        await self._background.drain(self.settings.cancel_grace)  # evicted sessions close
        await self.runtime.stop()
        await self.store.close()

    async def _close(self, conv: Conversation) -> None:
        await self.stop_run(conv)
        await conv.reset()

    # -- inventory ------------------------------------------------------------------------

    def host_commands(self, info: SessionInfo | None = None) -> tuple[Command, ...]:
        """The gateway's commands offered in a session that reported ``info``."""
        return host_commands(info or SessionInfo())

    def label(self, channel: str, labeler: Labeler) -> None:
        """How ``channel`` spells a command in one conversation (``/help`` lists it so)."""
        self._menus.labelers[channel] = labeler

    async def commands(
        self, channel: str | None = None, conversation: str | None = None
    ) -> tuple[Command, ...]:
        """The effective inventory of one conversation (host + runtime, dynamic included);
        without one, the menu.
        """
        if channel is None or conversation is None:
            return self._menus.of(None)
        return self._menus.of(await self._conversations.info(f"{channel}:{conversation}"))

    async def offered(self, message: InboundMessage) -> tuple[Command, ...]:
        """What ``/help`` lists to ``message``'s sender in its conversation (none: the
        menu): the effective inventory less what the sender may not run (owner-only).
        """
        commands = await self.commands(message.channel, message.conversation or None)
        return self.access.offered(message, commands)

    # -- answers outside the pipeline ---------------------------------------------------------

    def failure_reply(
        self, category: Category, name: str | None = None, error: str | None = None
    ) -> Reply:
        """A failure worded by the contract, for a channel whose input failed outside
        ``handle`` (a crash in the pipeline, a shutdown): the same text ``handle`` would give.
        """
        return self._contracts.failure(category, name, error)

    def pending_permission(
        self, channel: str, conversation: str, request_id: str
    ) -> frozenset[str] | None:
        """The option ids of a pending permission request; None when it is not pending."""
        return self._conversations.pending_permission(f"{channel}:{conversation}", request_id)

    async def answer_permission(
        self, channel: str, conversation: str, request_id: str, option_id: str | None
    ) -> bool:
        """Send a permission choice to the runtime; False when the request is no longer pending."""
        return await self._conversations.answer_permission(
            f"{channel}:{conversation}", request_id, option_id
        )
