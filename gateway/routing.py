"""Routing: what becomes of an input whose conversation is at hand. Its classification by
the conversation's contract decides: dropped (for another bot), rejected, a gateway command
run here, or a turn for the runtime: an ``Admitted`` for the busy policy (gateway/busy.py),
which lets it run or not.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from contract import RUNS, Classification

from .admitted import Admitted
from .arrivals import Arrivals, Place
from .attachments import FILES_NOT_SENT
from .busy import Busy
from .contracts import Contracts
from .conversation import Conversation
from .delivery import Delivery, hooks
from .host_handlers import HANDLERS, HostTools
from .inbound import InboundMessage, Outcome, Reply, ReplySink
from .offload import at_once, contract_work
from .sessions import Conversations, OpenFailed
from .state import Entry

log = logging.getLogger("slashgate.core")


class Router:
    def __init__(
        self,
        contracts: Contracts,
        conversations: Conversations,
        delivery: Delivery,
        tools: HostTools,
        arrivals: Arrivals,
        busy: Busy,
    ) -> None:
        self._arrivals = arrivals
        self._access = tools.access
        self._contracts = contracts
        self._conversations = conversations
        self._delivery = delivery
        self._tools = tools
        self._busy = busy

    async def route(
        self,
        conv: Conversation,
        message: InboundMessage,
        sink: ReplySink,
        entry: Entry | None,
        place: Place,
    ) -> Outcome:
        """Take ``message`` in ``conv`` (its session open, or given up waiting for) to its
        outcome; ``entry``, its journal entry, is finished once the reply is delivered;
        ``place``, its place in the conversation's arrival order, settled once it queued.
        """
        contracts = self._contracts
        contract = contracts.of(conv, message.bot_username)
        text = message.text
        now = at_once(conv.key, text)  # the usual case: no coroutine, no pass of the loop
        result = (
            contract.classify(text)
            if now
            else await contract_work(conv.key, text, contract.classify, text)
        )
        if result.for_other_bot:
            return self._delivery.drop(result)

        # Most inputs may run: their kind says so without asking the contract for a text.
        rejection = None if result.kind in RUNS else contracts.rejection(result)
        unlisted = result.kind == "unsupported" and conv.info.commands is None
        if rejection is not None and result.kind == "unsupported":
            if unlisted:
                # The runtime's list is not loaded (yet): never "unsupported" for that; the
                # input goes on, and the agent answers it or says why it cannot.
                rejection, result = None, result.as_typed()
            elif await self._listed_anew(conv):
                contract = contracts.of(conv, message.bot_username)
                result = (
                    contract.classify(text)
                    if now
                    else await contract_work(conv.key, text, contract.classify, text)
                )
                rejection = contracts.rejection(result)
        if rejection is None and result.command is not None and self._access.policies:
            if not self._access.may_run(message, result.command):
                rejection = contracts.failure("forbidden", result.name)
        if rejection is not None:
            self._arrivals.settle(place)  # it goes no further: the line goes on
            return await self._delivery.finish(sink, result, None, rejection)
        if result.source == "gateway":
            self._arrivals.settle(place)
            reply = await self._host(conv, message, result)
            return await self._delivery.finish(sink, result, None, reply)

        forwarded = (
            contracts.composer_input(result, conv.aliases)
            if now
            else await contract_work(conv.key, text, contracts.composer_input, result, conv.aliases)
        )
        name = result.name if result.kind == "supported" or unlisted else None
        agent_name = conv.aliases.get(name.lower(), name) if name and not unlisted else None
        admitted = Admitted(
            conv,
            message,
            sink,
            entry,
            place,
            result,
            forwarded,
            name,
            agent_name,
            hooks(type(sink)),
        )
        return await self._busy.admit(admitted)

    async def _host(
        self, conv: Conversation, message: InboundMessage, result: Classification
    ) -> Reply:
        """The reply of a gateway command: what its handler says, or its failure."""
        assert result.command is not None  # a gateway command has its name
        try:
            handler = HANDLERS[result.command]
            reply = Reply(await handler(self._tools, conv, result, message), slash=True)
        except Exception as exc:
            log.exception("/%s failed in %s", result.command, conv.key)
            reply = self._contracts.failed(result.command, str(exc) or type(exc).__name__)
        if message.attachments:  # the gateway's commands take no files: say so
            reply = replace(reply, text=f"{reply.text}\n\n{FILES_NOT_SENT}")
        return reply

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

    async def classify(self, message: InboundMessage) -> Classification:
        return (await self._classified(message))[0]

    async def preview(self, message: InboundMessage) -> Outcome:
        """What ``route`` would do with ``message``, running nothing: the rejection it would
        reply (``reply``), or the composer_input it would forward (``forwarded``; None for
        gateway commands and input for another bot). Busy and failures cannot be foreseen.
        """
        result, listed = await self._classified(message)
        if result.for_other_bot:
            return Outcome(result, None, None)
        rejection = (
            self._contracts.rejection(result) if listed or result.kind != "unsupported" else None
        )
        if rejection is not None or result.source == "gateway":
            return Outcome(result, None, rejection)
        return Outcome(result, self._contracts.composer_input(result), None)

    async def _classified(self, message: InboundMessage) -> tuple[Classification, bool]:
        """The classification, and whether the conversation's command list is loaded."""
        try:
            conv = await self._conversations.use(message.key, message)
        except OpenFailed:
            return self._contracts.host(message.bot_username).classify(message.text), False
        conv.users -= 1
        contract = self._contracts.of(conv, message.bot_username)
        return contract.classify(message.text), conv.info.commands is not None
