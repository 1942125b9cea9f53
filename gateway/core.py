"""The gateway core: contract -> rejection | host command | session -> runtime, and back."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any, cast

from contract import (
    Catalog,
    Category,
    Classification,
    Command,
    ComposerInputMessage,
    SlashContract,
    strict_payload,
)
from contract.models import built_message

from . import logs
from .attachments import FILES_NOT_SENT
from .conversation import Conversation, RunState
from .events import (
    Answered,
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    PermissionRequired,
    PlanUpdated,
    RuntimeEvent,
    SessionUpdated,
    StatusChanged,
    ToolStart,
    UsageReported,
)
from .host import HOST_COMMANDS, RESERVED, HostCommand, Labeler
from .inbound import InboundMessage, Outcome, Reply, ReplySink
from .inventory import hygienic, unalias
from .journal import Held, Journal, replica_name, reply_from, reply_record
from .metrics import Metrics
from .offload import at_once, contract_work
from .runtimes.base import Runtime, SessionInfo, Turn
from .settings import CoreSettings
from .state import Entry, StateStore, StoreUnavailable, TimedStore, open_store
from .tasks import BackgroundTasks

log = logging.getLogger("slashgate.core")

InventoryListener = Callable[[tuple[Command, ...]], Awaitable[None] | None]
ConversationListener = Callable[[str, tuple[Command, ...]], Awaitable[None] | None]
# A channel's way back to a journaled input after a restart: the message and where its reply
# goes, or None when the input is not for this gateway after all.
Recoverer = Callable[[Entry], Awaitable[tuple[InboundMessage, ReplySink] | None]]

RESTARTED = "the gateway restarted while it was running, so it did not finish; send it again"

_STOP_NOTES = {
    "cancelled": "_(cancelled)_",
    "refusal": "_(the agent declined to answer)_",
    "max_tokens": "_(reply cut short: the agent hit its token limit)_",
    "max_turn_requests": "_(reply cut short: the agent hit its request limit)_",
}
# Some agents (claude-agent-acp) answer the first prompt after a cancel with an empty turn.
EMPTY_AFTER_CANCEL = (
    "The agent returned nothing (its previous turn had just been cancelled). "
    "Send your message again."
)


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
        self._recoverers: dict[str, Recoverer] = {}
        self._base = SlashContract(
            interactive_only=settings.interactive_only,
            catalog=Catalog(**settings.catalog),
        )
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._listeners: list[InventoryListener] = []
        self._conversation_listeners: list[ConversationListener] = []
        self.inventory: tuple[Command, ...] | None = None  # latest runtime inventory seen
        # The menu's host commands: /mode joins once a session shows the agent has modes.
        self._menu_info = SessionInfo()
        self._background = BackgroundTasks()
        self._replicas: tuple[asyncio.Task[None], ...] = ()  # replica watch and cancel listener
        self.closing = False
        self._closed = asyncio.Event()  # set with ``closing``: inputs stop waiting for a session
        self.labelers: dict[str, Labeler] = {}  # channel name -> its spelling of commands
        self.metrics.watch(
            lambda: sum(c.queued for c in self._conversations.values()),
            lambda: sum(c.run is not None for c in self._conversations.values()),
        )
        runtime.observe_store(self.metrics.store_observer("runtime"))

    @property
    def catalog(self) -> Catalog:
        return self._base.catalog

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
            self._inventory_changed(hygienic(static, RESERVED)[0])

    async def readiness(self) -> str | None:
        """None when the runtime can open sessions now; else why not (``GET /readyz``)."""
        if self.closing:
            return "the gateway is shutting down"
        return await self.runtime.readiness()

    def recoverable(self, channel: str, recoverer: Recoverer) -> None:
        """A channel's recoverer of its journaled inputs (see ``recover``)."""
        self._recoverers[channel] = recoverer

    async def recover(self) -> None:
        """Finish what a crash left in the journal (once the channels can deliver): run what
        was received, tell the users whose turn was cut short, deliver the replies made but
        not sent. With a shared store, keep doing so for replicas that die.
        """
        await self._recover(starting=True)
        if self.journal.shared:
            self._replicas = (
                self._background.spawn(self._watch_replicas(), name="slashgate-replicas"),
                self._background.spawn(
                    self.journal.cancels(self._cancel_asked), name="slashgate-cancels"
                ),
            )

    async def _watch_replicas(self) -> None:
        while not self.closing:
            await asyncio.sleep(self.settings.lease_ttl / 3)
            try:
                await self.journal.beat()
                await self._recover(starting=False)
            except StoreUnavailable as exc:
                log.warning("replica watch: %s", exc)

    def _cancel_asked(self, key: str) -> None:
        """Another replica took a /cancel for a conversation whose turn runs here."""
        conv = self._conversations.get(key)
        if conv is not None and conv.run is not None:
            self._background.spawn(self.stop_run(conv))

    async def _recover(self, starting: bool) -> None:
        conversations: dict[str, list[Entry]] = {}
        for entry in await self.journal.orphans(starting):
            conversations.setdefault(entry.conversation, []).append(entry)
        if conversations:
            log.info(
                "journal: recovering %d inputs in %d conversations",
                sum(map(len, conversations.values())),
                len(conversations),
            )
        for entries in conversations.values():
            self._background.spawn(self._recover_in_order(entries))

    async def _recover_in_order(self, entries: list[Entry]) -> None:
        for entry in entries:
            try:
                await self._recover_one(entry)
            except Exception:
                log.exception("journal: recovering %s failed", entry.id)

    async def _recover_one(self, orphan: Entry) -> None:
        entry = await self.journal.adopt(orphan) if self.journal.shared else orphan
        if entry is None:
            return  # another replica took it
        recoverer = self._recoverers.get(entry.channel)
        restored = await recoverer(entry) if recoverer is not None else None
        if restored is None:
            log.warning("journal: input %s of %s cannot be recovered", entry.id, entry.channel)
            await self.journal.finish(entry)
            return
        message, sink = restored
        try:
            if entry.state == "running" and self.settings.recovery == "rerun":
                entry.state = "received"
            if entry.state == "received":
                await self.handle(message, sink, entry)
                return
            result = self._host_contract(message.bot_username).classify(message.text)
            if entry.state == "answered" and entry.reply is not None:
                reply = reply_from(entry.reply)
            else:
                reply = self._failure("generic", entry.command, RESTARTED)
            await self._finish(sink, result, None, reply, entry)
        finally:
            await sink.aclose()

    async def accept(
        self,
        channel: str,
        conversation: str,
        body: dict[str, Any],
        claim: str | None = None,
        value: Any = 1,
    ) -> Entry | None:
        """Journal an input before its platform is acknowledged (see ``Journal.append``):
        None for a redelivery; StoreUnavailable means acknowledge nothing (answer 503).
        """
        return await self.journal.append(channel, f"{channel}:{conversation}", body, claim, value)

    async def stop_runs(self) -> None:
        """Shutting down: refuse new input and cancel every running turn, so that each user
        gets the cancelled reply while the channels can still deliver it.
        """
        self.closing = True
        self._closed.set()
        await asyncio.gather(*(self.stop_run(c) for c in list(self._conversations.values())))

    async def stop(self) -> None:
        self.closing = True
        self._closed.set()
        for task in self._replicas:  # they loop until cancelled: nothing to wait for
            task.cancel()
        conversations = list(self._conversations.values())
        self._conversations.clear()
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
        return tuple(h.command for h in self._host(info or SessionInfo()))

    def _host(self, info: SessionInfo) -> tuple[HostCommand, ...]:
        return tuple(h for h in HOST_COMMANDS if h.available(info))

    def subscribe(self, listener: InventoryListener) -> None:
        """Called with the effective inventory (host first) whenever the runtime's changes."""
        self._listeners.append(listener)

    def menu(self) -> tuple[Command, ...] | None:
        """The effective inventory for menus; None until the runtime has reported one."""
        if self.inventory is None:
            return None
        return self.host_commands(self._menu_info) + self.inventory

    async def commands(
        self, channel: str | None = None, conversation: str | None = None
    ) -> tuple[Command, ...]:
        """The effective inventory of one conversation (host + runtime, dynamic included)."""
        if channel is None or conversation is None:
            return self.menu() or self.host_commands()
        try:
            conv = await self._use(f"{channel}:{conversation}")
        except _OpenFailed:
            return self.menu() or self.host_commands()
        conv.users -= 1
        known = conv.info.commands if conv.info.commands is not None else self.inventory
        return self.host_commands(conv.info) + (known or ())

    def subscribe_conversation(self, listener: ConversationListener) -> None:
        """Called with (conversation key, its effective inventory) whenever that
        conversation's commands change: for menus scoped to one chat.
        """
        self._conversation_listeners.append(listener)

    def _conversation_inventory(self, key: str, commands: tuple[Command, ...]) -> None:
        """A conversation's list seeds the global menu only while the runtime has given none:
        a conversation's own (dynamic) commands are its own, never everybody's menu.
        """
        conv = self._conversations.get(key)
        info = conv.info if conv else None
        modes = info.modes if info is not None else ()
        modes_found = bool(modes) and not self._menu_info.modes
        if modes_found:
            # Else every chat of an agent with modes would differ from the menu by /mode
            # and cost a menu of its own (Telegram: one setMyCommands per chat).
            self._menu_info = SessionInfo(modes=modes)
        if self.inventory is None and commands:
            self._inventory_changed(commands)
        elif modes_found and self.inventory is not None:
            self._notify(self._listeners, self.menu())
        menu = self.host_commands(info) + commands
        self._notify(self._conversation_listeners, key, menu)

    def _notify(self, listeners: list[Any], *args: Any) -> None:
        for listener in listeners:
            result = listener(*args)
            if asyncio.iscoroutine(result):
                self._background.spawn(result)

    def _inventory_changed(self, commands: tuple[Command, ...]) -> None:
        if commands == self.inventory:
            return
        self.inventory = commands
        self._notify(self._listeners, self.menu())

    # -- conversations --------------------------------------------------------------------

    async def _use(self, key: str, message: InboundMessage | None = None) -> Conversation:
        """The conversation for ``key``, its session open (or given up waiting for), marked in
        use (never evicted meanwhile): the caller must ``conv.users -= 1`` when done.
        """
        conv = self._enter(key)
        try:
            if conv.session is None or not conv.inventory_known.is_set():
                await self._ready(conv, message)
        except BaseException:
            conv.users -= 1
            raise
        return conv

    def _enter(self, key: str) -> Conversation:
        """The conversation for ``key``, made if need be, marked in use; its session may not
        be open yet (``_use`` waits for it).
        """
        conv = self._conversations.get(key)
        if conv is None:
            settings = self.settings
            conv = Conversation(
                key,
                self.runtime,
                self._conversation_inventory,
                settings.open_timeout,
                settings.inventory_wait,
                self._session_opened,
                self.metrics.turns(key.partition(":")[0], self.runtime.name),
            )
            self._conversations[key] = conv
        else:
            self._conversations.move_to_end(key)
        conv.users += 1
        self._evict()
        return conv

    async def _ready(self, conv: Conversation, message: InboundMessage | None) -> None:
        """Wait for the session and its first command list until ``conv.inventory_due``:
        then the input is classified with what is known, and a turn waits for the session
        within its own deadline (``_run``). A gateway command does not wait for a session
        still opening. An open that failed is ``_OpenFailed``.
        """
        loop = asyncio.get_running_loop()
        opening = conv.opening()
        if message is not None and not opening.done() and self._for_gateway(message):
            return
        if not opening.done() and conv.inventory_due > loop.time():
            await self._until(opening, conv.inventory_due)
            if not opening.done():
                log.warning("the session of %s is still opening: going on without it", conv.key)
        if opening.done() and not opening.cancelled() and opening.exception() is not None:
            raise _OpenFailed(_open_error(opening.exception()))
        due = conv.inventory_due
        if conv.session is None or conv.inventory_known.is_set() or due <= loop.time():
            return
        known = asyncio.ensure_future(conv.inventory_known.wait())
        try:
            await self._until(known, due)
        finally:
            known.cancel()
        if not conv.inventory_known.is_set():
            log.warning("no command inventory from the runtime for %s yet", conv.key)

    def _for_gateway(self, message: InboundMessage) -> bool:
        return self._host_contract(message.bot_username).classify(message.text).source == (
            "gateway"
        )

    async def _until(self, waited: asyncio.Future[Any], due: float) -> None:
        """Wait for ``waited`` until loop time ``due``, or until shutdown begins."""
        timeout = due - asyncio.get_running_loop().time()
        if self._closed.is_set() or timeout <= 0:
            return
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait(
                (waited, closed), timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            closed.cancel()

    async def _session(self, conv: Conversation, deadline: asyncio.Timeout) -> None:
        """Wait for the conversation's open, at most ``run_timeout`` from when it began (so a
        stuck open is the timeout text that long after the input that started it); once
        open, the turn has its whole ``run_timeout``. The deadline leaves the open going:
        other inputs share it, and it has a deadline of its own.
        """
        opening = conv.opening()
        run_timeout = self.settings.run_timeout
        deadline.reschedule(conv.open_started + run_timeout)
        try:
            await asyncio.shield(opening)
            deadline.reschedule(asyncio.get_running_loop().time() + run_timeout)
        except asyncio.CancelledError:
            if not opening.cancelled():
                raise  # this turn's deadline, or its cancel
            raise _OpenFailed("the session was closed while it opened") from None
        except Exception as exc:
            self.metrics.runtime_crashed(self.runtime.name, "open")
            raise _OpenFailed(_open_error(exc)) from exc

    def _session_opened(self, again: bool) -> None:
        self.metrics.session_opened(self.runtime.name, again)

    def _evict(self) -> None:
        while len(self._conversations) > self.settings.max_sessions:
            for key, conv in self._conversations.items():
                if not conv.busy and not conv.users:
                    del self._conversations[key]
                    self._background.spawn(conv.reset())
                    break
            else:
                return

    # -- the pipeline ---------------------------------------------------------------------

    async def classify(self, message: InboundMessage) -> Classification:
        return (await self._classified(message))[0]

    async def _classified(self, message: InboundMessage) -> tuple[Classification, bool]:
        """The classification, and whether the conversation's command list is loaded."""
        try:
            conv = await self._use(message.key, message)
        except _OpenFailed:
            return self._host_contract(message.bot_username).classify(message.text), False
        conv.users -= 1
        contract = self._contract(conv, message.bot_username)
        return contract.classify(message.text), conv.info.commands is not None

    def _host_contract(self, bot_username: str | None) -> SlashContract:
        """Gateway commands only: for input that cannot reach a runtime session."""
        return SlashContract(
            interactive_only=self._base.interactive_only,
            host_commands=self.host_commands(),
            bot_username=bot_username,
            catalog=self._base.catalog,
        )

    def _contract(self, conv: Conversation, bot_username: str | None) -> SlashContract:
        return conv.contract(
            self._base, lambda: self.host_commands(conv.info), bot_username, self.inventory or ()
        )

    async def handle(
        self, message: InboundMessage, sink: ReplySink | None = None, entry: Entry | None = None
    ) -> Outcome:
        """Run one input through the contract and, if it may run, the runtime. ``entry`` is
        its journal entry (``accept``), dropped once the reply is delivered.
        """
        started = time.monotonic()
        bound = logs.bind(message.channel, message.conversation, message.message_id)
        sink = sink or _NO_SINK
        try:
            if self.closing:
                outcome = await self._refuse(message, sink, "the gateway is shutting down", entry)
            else:
                # An open conversation's input goes straight on; another waits for its session.
                conv = self._enter(message.key)
                try:
                    if conv.session is None or not conv.inventory_known.is_set():
                        outcome = await self._take(conv, message, sink, entry)
                    else:
                        outcome = await self._handle(conv, message, sink, entry)
                finally:
                    conv.users -= 1
            if log.isEnabledFor(logging.INFO):
                _log_turn(outcome, time.monotonic() - started)
        finally:
            logs.reset(bound)
        self.metrics.handled(message.channel, outcome)
        return outcome

    async def preview(self, message: InboundMessage) -> Outcome:
        """What ``handle`` would do with ``message``, running nothing: the rejection it would
        reply (``reply``), or the composer_input it would forward (``forwarded``; None for
        gateway commands and input for another bot). Busy and failures cannot be foreseen.
        """
        result, listed = await self._classified(message)
        if result.for_other_bot:
            return Outcome(result, None, None)
        rejection = self._rejection(result) if listed or result.kind != "unsupported" else None
        if rejection is not None or result.source == "gateway":
            return Outcome(result, None, rejection)
        return Outcome(result, self._composer_input(result), None)

    def _rejection(self, result: Classification) -> Reply | None:
        """The reply ``handle`` gives input that must not run; None when it may run."""
        text = self._base.rejection(result)
        if text is None:
            return None
        category = cast(Category, result.kind)  # invalid | unsupported | interactive_only
        return Reply(text, category, slash=True)

    def _composer_input(
        self, result: Classification, aliases: dict[str, str] | None = None
    ) -> ComposerInputMessage:
        """What ``handle`` forwards for input that may run: names lowered for the runtime, and
        aliased agent commands (``agent-help``) back to the agent's own name.
        """
        payload = unalias(result.payload, aliases) if aliases else result.payload
        return built_message(strict_payload(payload) if self.runtime.strict_names else payload)

    async def _take(
        self, conv: Conversation, message: InboundMessage, sink: ReplySink, entry: Entry | None
    ) -> Outcome:
        """``_handle`` once the conversation's session is open, or given up waiting for."""
        try:
            await self._ready(conv, message)
        except _OpenFailed as exc:  # the runtime cannot open a session: one reply, not a crash
            return await self._refuse(message, sink, str(exc), entry)
        return await self._handle(conv, message, sink, entry)

    async def _refuse(
        self, message: InboundMessage, sink: ReplySink, error: str, entry: Entry | None
    ) -> Outcome:
        """The failure reply for input that cannot reach a session at all."""
        result = self._host_contract(message.bot_username).classify(message.text)
        if result.for_other_bot:
            return await self._drop(result, entry)
        name = result.name if result.kind != "not_slash" else None
        reply = self._failure(self._base.categorize(error), name, error)
        return await self._finish(sink, result, None, reply, entry)

    async def _drop(self, result: Classification, entry: Entry | None) -> Outcome:
        if entry is not None:
            await self.journal.finish(entry)
        return Outcome(result, None, None)

    async def _handle(
        self, conv: Conversation, message: InboundMessage, sink: ReplySink, entry: Entry | None
    ) -> Outcome:
        contract = self._contract(conv, message.bot_username)
        text = message.text
        now = at_once(conv.key, text)  # the usual case: no coroutine, no pass of the loop
        result = (
            contract.classify(text)
            if now
            else await contract_work(conv.key, text, contract.classify, text)
        )
        if result.for_other_bot:
            return await self._drop(result, entry)

        rejection = self._rejection(result)
        unlisted = result.kind == "unsupported" and conv.info.commands is None
        if rejection is not None and result.kind == "unsupported":
            if unlisted:
                # The runtime's list is not loaded (yet): never "unsupported" for that; the
                # input goes on, and the agent answers it or says why it cannot.
                rejection = None
            elif await self._listed_anew(conv):
                contract = self._contract(conv, message.bot_username)
                result = (
                    contract.classify(text)
                    if now
                    else await contract_work(conv.key, text, contract.classify, text)
                )
                rejection = self._rejection(result)
        if rejection is not None:
            return await self._finish(sink, result, None, rejection, entry)

        if result.source == "gateway":
            host = next(h for h in self._host(conv.info) if h.command.name == result.command)
            try:
                reply = Reply(await host.handler(self, conv, result), slash=True)
            except Exception as exc:
                log.exception("/%s failed in %s", result.command, conv.key)
                error = str(exc) or type(exc).__name__
                reply = self._failure(self._base.categorize(error), result.command, error)
            if message.attachments:  # the gateway's commands take no files: say so
                reply = replace(reply, text=f"{reply.text}\n\n{FILES_NOT_SENT}")
            return await self._finish(sink, result, None, reply, entry)

        forwarded = (
            self._composer_input(result, conv.aliases)
            if now
            else await contract_work(conv.key, text, self._composer_input, result, conv.aliases)
        )
        slash = result.kind == "supported" or unlisted
        name = result.name if slash else None
        agent_name = conv.aliases.get(name.lower(), name) if name and not unlisted else None
        policy = self.settings.busy_policy
        if (slash or policy != "queue") and self.journal.shared:
            if policy == "interrupt" and not slash:
                await self.journal.cancel_elsewhere(conv.key)
            elif await self.journal.running_elsewhere(conv.key):  # busy on another replica
                return await self._finish(sink, result, None, self._failure("busy", name), entry)
        hooks = _hooks(type(sink))
        if not conv.try_acquire():
            if (
                slash
                or policy == "reject"
                or (policy == "queue" and conv.queued >= self.settings.max_queue)
            ):
                return await self._finish(sink, result, None, self._failure("busy", name), entry)
            if "accepted" in hooks:
                await _safely(sink.accepted(result, forwarded))
            if policy == "queue" and "queued" in hooks:
                await _safely(sink.queued(conv.queued + 1))
            if policy == "interrupt":
                await self.stop_run(conv)
            await conv.acquire(front=policy == "interrupt")
        elif "accepted" in hooks:
            await _safely(sink.accepted(result, forwarded))
        # The slot is held until the reply is delivered: the next turn of this conversation
        # may not reply before it. It is not held for the journal's "delivered" write after
        # that: a command sent the instant the reply lands must not find the chat busy.
        held: Held | None = None
        holder: asyncio.Task[None] | None = None
        try:
            if not self.closing and self.journal.shared:
                held = await self.journal.turn(conv.key, entry, lambda: self.closing)
            if self.closing:
                reply = self._failure("generic", name, "the gateway is shutting down")
            else:
                if held is not None:
                    holder = self._background.spawn(
                        self.journal.hold(held, lambda: self.stop_run(conv))
                    )
                turn = Turn(
                    forwarded, agent_name, result.args, message.user, message.attachments, True
                )
                if entry is not None:
                    entry.state, entry.command = "running", name
                    await self.journal.mark(entry, held.lease if held else None)
                reply = await self._run(conv, turn, sink, hooks, agent_name or name)
                if entry is not None:
                    entry.state, entry.reply = "answered", reply_record(reply)
                    await self.journal.mark(entry, held.lease if held else None)
            outcome = await self._finish(sink, result, forwarded, reply)
        except StoreUnavailable as exc:  # no turn order to be had across replicas
            reply = self._failure(self._base.categorize(str(exc)), name, str(exc))
            outcome = await self._finish(sink, result, forwarded, reply)
        finally:
            if holder is not None:
                holder.cancel()
            if held is not None:
                await self.journal.release(held)
            conv.release()
        if entry is not None:
            await self.journal.finish(entry)
        return outcome

    async def _finish(
        self,
        sink: ReplySink,
        result: Classification,
        forwarded: ComposerInputMessage | None,
        reply: Reply,
        entry: Entry | None = None,
    ) -> Outcome:
        """Deliver the reply, then journal ``entry`` as delivered (without it: the caller
        does, once it has let the conversation go).
        """
        outcome = Outcome(result, forwarded, reply)
        hooks = _hooks(type(sink))
        try:
            if "final" in hooks:
                await sink.final(reply)
        except Exception:
            log.exception(_RENDER_FAILED)
        try:
            if "completed" in hooks:
                await sink.completed(outcome)
        except Exception:
            log.exception(_RENDER_FAILED)
        if entry is not None:
            await self.journal.finish(entry)
        return outcome

    def failure_reply(
        self, category: Category, name: str | None = None, error: str | None = None
    ) -> Reply:
        """A failure worded by the contract, for a channel whose input failed outside
        ``handle`` (a crash in the pipeline, a shutdown): the same text ``handle`` would give.
        """
        return self._failure(category, name, error)

    def _failure(self, category: Category, name: str | None, error: str | None = None) -> Reply:
        text = self._base.failure(category, name, error)
        return Reply(text, category, slash=name is not None)

    async def _listed_anew(self, conv: Conversation) -> bool:
        """Whether the runtime, asked again for this conversation's commands (an input named
        one it did not list), reported a different list.
        """
        session, before = conv.session, conv.info.commands
        if session is None:
            return False
        try:
            await session.refresh_commands()
        except Exception:
            log.exception("refreshing the commands of %s failed", conv.key)
            return False
        return conv.info.commands != before

    async def _run(
        self,
        conv: Conversation,
        turn: Turn,
        sink: ReplySink,
        hooks: frozenset[str],
        name: str | None,
    ) -> Reply:
        """``name``: the command as the user's texts show it (``turn.command``, or the name
        typed when the runtime's list was not loaded).
        """
        state = RunState(name)  # its task is set once it may wait (``stop_run``)
        conv.run = state
        bound = logs.bind_turn()
        try:
            events: AsyncIterator[RuntimeEvent] | None = None
            if conv.session is not None:
                try:
                    events = conv.session.run(turn)
                except Exception as exc:
                    return self._crashed(conv, name, exc)
                # A turn the runtime answered at once, for a sink that streams nothing: read
                # here and now, without a deadline (nothing is awaited) or a pass of the loop.
                if type(events) is Answered and not hooks & _STREAMING:
                    return self._answered(conv, state, events)
            # Consumed in this task (no extra task per turn): the deadline cancels it here.
            state.task = asyncio.current_task()
            async with asyncio.timeout(self.settings.run_timeout) as deadline:
                if events is None:  # still opening, or closed by /new meanwhile
                    await self._session(conv, deadline)
                return await self._consume(conv, turn, sink, state, events, hooks)
        except _OpenFailed as exc:
            return self._failure(self._base.categorize(str(exc)), name, str(exc))
        except asyncio.CancelledError:
            if not state.forced:
                raise  # shutdown
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return self._end_reply(conv, state, "cancelled")  # stopped while its session opened
        except TimeoutError:
            try:
                await self._cancel_runtime(conv)
            except asyncio.CancelledError:
                if not state.forced:
                    raise
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return self._failure("timeout", name)
        finally:
            conv.run = None
            state.done.set()
            logs.reset(bound)
            if conv.turns is not None:
                conv.turns.seconds.observe(time.monotonic() - state.started)

    def _answered(self, conv: Conversation, state: RunState, events: Answered) -> Reply:
        """``_consume`` of a whole stream at hand, for a sink without streaming hooks."""
        for event in events.events:
            if isinstance(event, MessageDelta):
                self._delta(conv, state, event)
            elif isinstance(event, MessageEnd):
                return self._end_reply(conv, state, event.stop_reason)
            elif isinstance(event, ErrorEvent):
                return self._failure(event.category, state.command, event.message)
            elif isinstance(event, SessionUpdated):
                conv.apply(event)
            else:
                self._note(conv, state, event)
        return self._end_reply(conv, state, "cancelled" if state.stopping else "end_turn")

    def _delta(self, conv: Conversation, state: RunState, event: MessageDelta) -> None:
        if not state.parts and conv.turns is not None:
            conv.turns.first_delta.observe(time.monotonic() - state.started)
        state.parts.append(event.text)

    async def _consume(
        self,
        conv: Conversation,
        turn: Turn,
        sink: ReplySink,
        state: RunState,
        events: AsyncIterator[RuntimeEvent] | None,
        hooks: frozenset[str],
    ) -> Reply:
        assert conv.session is not None
        name = state.command
        try:
            if events is None:
                events = conv.session.run(turn)
            try:
                async for event in events:
                    if isinstance(event, MessageDelta):
                        self._delta(conv, state, event)
                        if "delta" in hooks:
                            await _safely(sink.delta(event.text))
                    elif isinstance(event, MessageEnd):
                        return self._end_reply(conv, state, event.stop_reason)
                    elif isinstance(event, ErrorEvent):
                        return self._failure(event.category, name, event.message)
                    elif isinstance(event, SessionUpdated):
                        conv.apply(event)
                    else:
                        await self._show(conv, state, sink, event, hooks)
            finally:
                # Closed now, not whenever it is collected: its clean-up (cancelling its own
                # work) must not run into the next turn.
                aclose = getattr(events, "aclose", None)
                if aclose is not None:
                    await aclose()
        except asyncio.CancelledError:
            if not state.forced:
                raise  # the deadline, or shutdown
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return self._end_reply(conv, state, "cancelled")
        except Exception as exc:  # a runtime failure is one user-facing message, never a crash
            return self._crashed(conv, name, exc)
        return self._end_reply(conv, state, "cancelled" if state.stopping else "end_turn")

    def _crashed(self, conv: Conversation, name: str | None, exc: Exception) -> Reply:
        log.exception("runtime failed in %s", conv.key, exc_info=exc)
        self.metrics.runtime_crashed(self.runtime.name, "turn")
        return self._failure(self._base.categorize(str(exc)), name, str(exc) or type(exc).__name__)

    async def _show(
        self,
        conv: Conversation,
        state: RunState,
        sink: ReplySink,
        event: RuntimeEvent,
        hooks: frozenset[str],
    ) -> None:
        """A tool, plan, reasoning, usage, permission or status event: to the channel."""
        self._note(conv, state, event)
        if "event" not in hooks:
            return
        await _safely(sink.event(event))
        if isinstance(event, PermissionRequired):
            await _safely(sink.event(StatusChanged("waiting_for_permission", event.title)))

    def _note(self, conv: Conversation, state: RunState, event: RuntimeEvent) -> None:
        """What the core keeps of an event besides the text."""
        if isinstance(event, UsageReported):
            state.usage = event if state.usage is None else state.usage.merged(event)
        elif isinstance(event, ToolStart | PlanUpdated):
            state.acted = True
        elif isinstance(event, PermissionRequired):  # answerable once the channel shows it
            options = frozenset(o.option_id for o in event.options)
            conv.remember_permission(event.request_id, options)

    def _end_reply(self, conv: Conversation, state: RunState, stop_reason: str) -> Reply:
        text = "".join(state.parts)
        note = _STOP_NOTES.get(stop_reason)
        if note:
            text = f"{text}\n\n{note}" if text else note
        elif not text and conv.after_cancel and not state.acted:
            text = EMPTY_AFTER_CANCEL
        elif not text:
            text = f"✅ /{state.command} executed." if state.command else "✅ Done."
        conv.after_cancel = stop_reason == "cancelled"
        return Reply(text, None, stop_reason, slash=state.command is not None, usage=state.usage)

    async def stop_run(self, conv: Conversation) -> bool:
        """Cancel the run in progress, if any; True when one was running."""
        state = conv.run
        if state is None or state.task is None:
            return False
        await self._stop(conv, state)
        return True

    async def _stop(self, conv: Conversation, state: RunState) -> None:
        """Ask the runtime to cancel; past the grace period (one for the ask and the turn's
        end together), stop reading its stream. A turn still waiting for its session has
        nothing to cancel in the runtime: it stops at once.
        """
        state.stopping = True
        grace = self.settings.cancel_grace
        if conv.session is not None:
            try:
                async with asyncio.timeout(grace):
                    await self._cancel_runtime(conv)
                    await state.done.wait()
                return
            except TimeoutError:
                pass
        state.forced = True
        if state.task is not None:
            state.task.cancel()
        try:
            await asyncio.wait_for(state.done.wait(), grace)
        except TimeoutError:
            log.error("the turn in %s does not stop; leaving it behind", conv.key)

    async def _cancel_runtime(self, conv: Conversation) -> None:
        if conv.session is None:
            return
        try:
            await asyncio.wait_for(conv.session.cancel(), self.settings.cancel_grace)
        except Exception:
            log.warning("runtime did not acknowledge cancel in %s", conv.key, exc_info=True)

    def pending_permission(
        self, channel: str, conversation: str, request_id: str
    ) -> frozenset[str] | None:
        """The option ids of a pending permission request; None when it is not pending."""
        conv = self._conversations.get(f"{channel}:{conversation}")
        return None if conv is None else conv.permissions.get(request_id)

    async def answer_permission(
        self, channel: str, conversation: str, request_id: str, option_id: str | None
    ) -> bool:
        """Send a permission choice to the runtime; False when the request is no longer pending."""
        conv = self._conversations.get(f"{channel}:{conversation}")
        if conv is None or conv.session is None or request_id not in conv.permissions:
            return False
        answered = await conv.session.answer_permission(request_id, option_id)
        if answered:
            conv.permissions.pop(request_id, None)
        return answered


def _log_turn(outcome: Outcome, seconds: float) -> None:
    """The one INFO line per input: where, what it was, how it ended, how long it took."""
    result, reply = outcome.classification, outcome.reply
    if reply is None:
        ended = "dropped"  # addressed to another bot
    elif reply.category is None and reply.stop_reason not in (None, "end_turn"):
        ended = str(reply.stop_reason)  # cancelled, refusal, max_tokens: not failures
    else:
        ended = reply.category or "ok"
    # Channel and conversation are the line's context fields already (logs.bind).
    log.info(
        "turn",
        extra=logs.fields(
            classification=result.kind,
            command=result.command or "-",
            outcome=ended,
            duration=round(seconds, 3),  # seconds
        ),
    )


class _OpenFailed(Exception):
    """The runtime could not open a session; the message says why."""


def _open_error(exc: BaseException | None) -> str:
    if isinstance(exc, TimeoutError):
        return "the runtime session did not open in time (timed out)"
    return str(exc) or type(exc).__name__


# A sink's hooks that its class implements: the others do nothing, and are not called.
_HOOKS = ("accepted", "delta", "queued", "event", "final", "completed")
_STREAMING = frozenset(("delta", "event"))  # hooks called while a turn runs
_NO_SINK = ReplySink()
_RENDER_FAILED = "channel failed to render"
_HOOKS_OF: dict[type, frozenset[str]] = {}  # by sink class; a handful of classes
_HOOKS_KEPT = 64


def _hooks(kind: type) -> frozenset[str]:
    hooks = _HOOKS_OF.get(kind)
    if hooks is None:
        hooks = frozenset(n for n in _HOOKS if getattr(kind, n) is not getattr(ReplySink, n))
        if len(_HOOKS_OF) < _HOOKS_KEPT:
            _HOOKS_OF[kind] = hooks
    return hooks


async def _safely(step: Awaitable[None]) -> None:
    """A channel's rendering failure must not end the run: log it and go on."""
    try:
        await step
    except Exception:
        log.exception(_RENDER_FAILED)
