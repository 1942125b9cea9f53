"""The gateway core: contract -> rejection | host command | session -> runtime, and back."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
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

from .config import Settings
from .conversation import Conversation, RunState
from .events import (
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    PermissionRequired,
    SessionUpdated,
)
from .host import HOST_COMMANDS, HostCommand
from .inbound import InboundMessage, Outcome, Reply, ReplySink
from .runtimes.base import Runtime, RuntimeSession, SessionInfo, Turn
from .tasks import BackgroundTasks

log = logging.getLogger("slashgate.core")

InventoryListener = Callable[[tuple[Command, ...]], Awaitable[None] | None]
ConversationListener = Callable[[str, tuple[Command, ...]], Awaitable[None] | None]

_STOP_NOTES = {
    "cancelled": "_(cancelled)_",
    "refusal": "_(the agent declined to answer)_",
    "max_tokens": "_(reply cut short: the agent hit its token limit)_",
    "max_turn_requests": "_(reply cut short: the agent hit its request limit)_",
}


class Gateway:
    def __init__(self, settings: Settings, runtime: Runtime) -> None:
        self.settings = settings
        self.runtime = runtime
        self._base = SlashContract(
            interactive_only=settings.interactive_only,
            catalog=Catalog(**settings.catalog),
        )
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._listeners: list[InventoryListener] = []
        self._conversation_listeners: list[ConversationListener] = []
        self.inventory: tuple[Command, ...] | None = None  # latest runtime inventory seen
        self._background = BackgroundTasks()
        self.closing = False

    @property
    def catalog(self) -> Catalog:
        return self._base.catalog

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        await self.runtime.start()
        static = await self.runtime.static_commands()
        if static is not None:
            self._inventory_changed(static)

    async def stop_runs(self) -> None:
        """Shutting down: refuse new input and cancel every running turn, so that each user
        gets the cancelled reply while the channels can still deliver it.
        """
        self.closing = True
        await asyncio.gather(*(self.stop_run(c) for c in list(self._conversations.values())))

    async def stop(self) -> None:
        self.closing = True
        for conv in list(self._conversations.values()):
            await self.stop_run(conv)
            await conv.reset()
        self._conversations.clear()
        await self._background.drain(self.settings.cancel_grace)  # evicted sessions close
        await self.runtime.stop()

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
        return self.host_commands() + self.inventory

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
        return self.host_commands(conv.info) + (conv.info.commands or ())

    def subscribe_conversation(self, listener: ConversationListener) -> None:
        """Called with (conversation key, its effective inventory) whenever that
        conversation's commands change: for menus scoped to one chat.
        """
        self._conversation_listeners.append(listener)

    def _conversation_inventory(self, key: str, commands: tuple[Command, ...]) -> None:
        """A conversation's list seeds the global menu only while the runtime has given none:
        a conversation's own (dynamic) commands are its own, never everybody's menu.
        """
        if self.inventory is None and commands:
            self._inventory_changed(commands)
        conv = self._conversations.get(key)
        menu = self.host_commands(conv.info if conv else None) + commands
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
        self._notify(self._listeners, self.host_commands() + commands)

    # -- conversations --------------------------------------------------------------------

    async def _use(self, key: str) -> Conversation:
        """The conversation for ``key``, its session open, marked in use (never evicted
        meanwhile): the caller must ``conv.users -= 1`` when done.
        """
        conv = self._conversations.get(key)
        if conv is None:
            conv = Conversation(key, self.runtime, self._conversation_inventory)
            self._conversations[key] = conv
        else:
            self._conversations.move_to_end(key)
        conv.users += 1
        try:
            self._evict()
            if conv.session is None:
                await self._open(conv)
        except BaseException:
            conv.users -= 1
            raise
        return conv

    async def _open(self, conv: Conversation) -> RuntimeSession:
        try:
            session = await conv.open()
        except Exception as exc:
            log.exception("cannot open a runtime session for %s", conv.key)
            raise _OpenFailed(str(exc) or type(exc).__name__) from exc
        if not conv.inventory_known.is_set() and self.settings.inventory_wait:
            try:
                await asyncio.wait_for(conv.inventory_known.wait(), self.settings.inventory_wait)
            except TimeoutError:
                log.warning("no command inventory from the runtime for %s yet", conv.key)
        return session

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
        try:
            conv = await self._use(message.key)
        except _OpenFailed:
            return self._host_contract(message.bot_username).classify(message.text)
        conv.users -= 1
        return self._contract(conv, message.bot_username).classify(message.text)

    def _host_contract(self, bot_username: str | None) -> SlashContract:
        """Gateway commands only: for input that cannot reach a runtime session."""
        return SlashContract(
            interactive_only=self._base.interactive_only,
            host_commands=self.host_commands(),
            bot_username=bot_username,
            catalog=self._base.catalog,
        )

    def _contract(self, conv: Conversation, bot_username: str | None) -> SlashContract:
        return conv.contract(self._base, self.host_commands(conv.info), bot_username)

    async def handle(self, message: InboundMessage, sink: ReplySink | None = None) -> Outcome:
        """Run one input through the contract and, if it may run, the runtime."""
        sink = sink or ReplySink()
        if self.closing:
            return await self._refuse(message, sink, "the gateway is shutting down")
        try:
            conv = await self._use(message.key)
        except _OpenFailed as exc:  # the runtime cannot open a session: one reply, not a crash
            return await self._refuse(message, sink, str(exc))
        try:
            return await self._handle(conv, message, sink)
        finally:
            conv.users -= 1

    async def _refuse(self, message: InboundMessage, sink: ReplySink, error: str) -> Outcome:
        """The failure reply for input that cannot reach a session at all."""
        result = self._host_contract(message.bot_username).classify(message.text)
        if result.for_other_bot:
            return Outcome(result, None, None)
        name = result.name if result.kind != "not_slash" else None
        reply = self._failure(self._base.categorize(error), name, error)
        return await self._finish(sink, result, None, reply)

    async def _handle(
        self, conv: Conversation, message: InboundMessage, sink: ReplySink
    ) -> Outcome:
        result = self._contract(conv, message.bot_username).classify(message.text)
        if result.for_other_bot:
            return Outcome(result, None, None)

        rejection = self._base.rejection(result)
        if rejection is not None:
            category = cast(Category, result.kind)  # invalid | unsupported | interactive_only
            return await self._finish(sink, result, None, Reply(rejection, category, slash=True))

        if result.source == "gateway":
            host = next(h for h in self._host(conv.info) if h.command.name == result.command)
            try:
                reply = Reply(await host.handler(self, conv, result), slash=True)
            except Exception as exc:
                log.exception("/%s failed in %s", result.command, conv.key)
                error = str(exc) or type(exc).__name__
                reply = self._failure(self._base.categorize(error), result.command, error)
            return await self._finish(sink, result, None, reply)

        payload = result.payload
        forwarded = ComposerInputMessage(
            payload=strict_payload(payload) if self.runtime.strict_names else payload
        )
        slash = result.kind == "supported"
        name = result.command if slash else None
        if not conv.try_acquire():
            policy = self.settings.busy_policy
            if (
                slash
                or policy == "reject"
                or (policy == "queue" and conv.queued >= self.settings.max_queue)
            ):
                return await self._finish(sink, result, None, self._failure("busy", name))
            await _safely(sink.accepted(result, forwarded))
            if policy == "interrupt":
                await self.stop_run(conv)
            await conv.acquire(front=policy == "interrupt")
        else:
            await _safely(sink.accepted(result, forwarded))
        try:
            if self.closing:
                reply = self._failure("generic", name, "the gateway is shutting down")
            else:
                turn = Turn(forwarded, name, result.args, message.user, message.attachments)
                reply = await self._run(conv, turn, sink)
        finally:
            conv.release()
        return await self._finish(sink, result, forwarded, reply)

    async def _finish(
        self,
        sink: ReplySink,
        result: Classification,
        forwarded: ComposerInputMessage | None,
        reply: Reply,
    ) -> Outcome:
        await _safely(sink.final(reply))
        return Outcome(result, forwarded, reply)

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

    async def _run(self, conv: Conversation, turn: Turn, sink: ReplySink) -> Reply:
        if conv.session is None:  # /new closed it while this input waited
            try:
                await self._open(conv)
            except _OpenFailed as exc:
                return self._failure(self._base.categorize(str(exc)), turn.command, str(exc))
        state = RunState(turn.command, task=asyncio.current_task())
        conv.run = state
        try:
            # Consumed in this task (no extra task per turn): the deadline cancels it here.
            async with asyncio.timeout(self.settings.run_timeout):
                return await self._consume(conv, turn, sink, state)
        except TimeoutError:
            try:
                await self._cancel_runtime(conv)
            except asyncio.CancelledError:
                if not state.forced:
                    raise
                asyncio.current_task().uncancel()  # type: ignore[union-attr]
            return self._failure("timeout", turn.command)
        finally:
            conv.run = None
            state.done.set()

    async def _consume(
        self, conv: Conversation, turn: Turn, sink: ReplySink, state: RunState
    ) -> Reply:
        assert conv.session is not None
        name = turn.command
        try:
            events = conv.session.run(turn)
            try:
                async for event in events:
                    if isinstance(event, MessageDelta):
                        state.parts.append(event.text)
                        await _safely(sink.delta(event.text))
                    elif isinstance(event, MessageEnd):
                        return self._end_reply(state, event.stop_reason)
                    elif isinstance(event, ErrorEvent):
                        return self._failure(event.category, name, event.message)
                    elif isinstance(event, SessionUpdated):
                        conv.apply(event)
                    else:
                        if isinstance(event, PermissionRequired):
                            conv.remember_permission(event.request_id)
                        await _safely(sink.event(event))
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
            return self._end_reply(state, "cancelled")
        except Exception as exc:  # a runtime failure is one user-facing message, never a crash
            log.exception("runtime failed in %s", conv.key)
            return self._failure(
                self._base.categorize(str(exc)), name, str(exc) or type(exc).__name__
            )
        return self._end_reply(state, "cancelled" if state.stopping else "end_turn")

    def _end_reply(self, state: RunState, stop_reason: str) -> Reply:
        text = "".join(state.parts)
        note = _STOP_NOTES.get(stop_reason)
        if note:
            text = f"{text}\n\n{note}" if text else note
        elif not text:
            text = f"✅ /{state.command} executed." if state.command else "✅ Done."
        return Reply(text, None, stop_reason, slash=state.command is not None)

    async def stop_run(self, conv: Conversation) -> bool:
        """Cancel the run in progress, if any; True when one was running."""
        state = conv.run
        if state is None or state.task is None:
            return False
        await self._stop(conv, state)
        return True

    async def _stop(self, conv: Conversation, state: RunState) -> None:
        """Ask the runtime to cancel; past the grace period, stop reading its stream."""
        state.stopping = True
        await self._cancel_runtime(conv)
        try:
            await asyncio.wait_for(state.done.wait(), self.settings.cancel_grace)
        except TimeoutError:
            state.forced = True
            if state.task is not None:
                state.task.cancel()
            try:
                await asyncio.wait_for(state.done.wait(), self.settings.cancel_grace)
            except TimeoutError:
                log.error("the turn in %s does not stop; leaving it behind", conv.key)

    async def _cancel_runtime(self, conv: Conversation) -> None:
        if conv.session is None:
            return
        try:
            await asyncio.wait_for(conv.session.cancel(), self.settings.cancel_grace)
        except Exception:
            log.warning("runtime did not acknowledge cancel in %s", conv.key, exc_info=True)

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


class _OpenFailed(Exception):
    """The runtime could not open a session; the message says why."""


async def _safely(step: Awaitable[None]) -> None:
    """A channel's rendering failure must not end the run: log it and go on."""
    try:
        await step
    except Exception:
        log.exception("channel failed to render")
