"""The slash contract as the gateway applies it: which contract classifies an input (its
conversation's, or the gateway's commands only), what input that must not run is told, what
goes to the runtime for input that may, and the wording of failures.
"""

from __future__ import annotations

import weakref
from functools import lru_cache
from typing import cast

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

from .conversation import Conversation
from .host import host_commands
from .inbound import InboundMessage, Reply
from .inventory import unalias
from .menus import Menus
from .runtimes.base import Runtime, SessionInfo
from .settings import CoreSettings

SHARED_CONTRACTS = 256  # distinct inventories whose contract all conversations share


class Contracts:
    def __init__(self, settings: CoreSettings, runtime: Runtime, menus: Menus) -> None:
        self.base = SlashContract(
            interactive_only=settings.interactive_only,
            catalog=Catalog(**settings.catalog),
        )
        self._runtime = runtime
        self._menus = menus

    @property
    def catalog(self) -> Catalog:
        return self.base.catalog

    def of(self, conv: Conversation, bot_username: str | None) -> SlashContract:
        """The contract of ``conv``'s commands and the host commands it offers (listed only
        when the cached contract is out of date). Until its session reports commands, the
        runtime's menu stands in, and nothing is cached.
        """
        base, info = self.base, conv.info
        commands = info.commands
        if commands is None:
            host = host_commands(info, unlisted=True)
            known = self._menus.inventory or ()
            return _shared_contract(known, base.interactive_only, host, bot_username, base.catalog)
        cached = conv.contract_cache
        contract = None if cached is None or cached[0] != bot_username else cached[1]()
        if contract is None:
            host = host_commands(info, unlisted=True)
            contract = _shared_contract(
                commands, base.interactive_only, host, bot_username, base.catalog
            )
            conv.contract_cache = (bot_username, weakref.ref(contract))
        return contract

    def host(self, bot_username: str | None) -> SlashContract:
        """Gateway commands only: for input that cannot reach a runtime session."""
        return SlashContract(
            interactive_only=self.base.interactive_only,
            host_commands=host_commands(SessionInfo(), unlisted=True),
            bot_username=bot_username,
            catalog=self.base.catalog,
        )

    def for_gateway(self, message: InboundMessage) -> bool:
        """Whether ``message`` is one of the gateway's own commands."""
        return self.host(message.bot_username).classify(message.text).source == "gateway"

    def rejection(self, result: Classification) -> Reply | None:
        """The reply to input that must not run; None when it may run."""
        text = self.base.rejection(result)
        if text is None:
            return None
        category = cast(Category, result.kind)  # invalid | unsupported | interactive_only
        return Reply(text, category, slash=True)

    def composer_input(
        self, result: Classification, aliases: dict[str, str] | None = None
    ) -> ComposerInputMessage:
        """What goes to the runtime for input that may run: names lowered for the runtime,
        and aliased agent commands (``agent-help``) back to the agent's own name.
        """
        payload = unalias(result.payload, aliases) if aliases else result.payload
        return built_message(strict_payload(payload) if self._runtime.strict_names else payload)

    def failure(
        self, category: Category, name: str | None, error: str | None = None, retry: int = 1
    ) -> Reply:
        """A failure worded by the contract; ``name``: the command the input was, if any."""
        text = self.base.failure(category, name, error, retry)
        return Reply(text, category, slash=name is not None)

    def failed(self, name: str | None, error: str) -> Reply:
        """The failure for an error message: its category is the contract's reading of it."""
        return self.failure(self.base.categorize(error), name, error)


@lru_cache(maxsize=SHARED_CONTRACTS)
def _shared_contract(
    commands: tuple[Command, ...],
    interactive_only: frozenset[str],
    host: tuple[Command, ...],
    bot_username: str | None,
    catalog: Catalog,
) -> SlashContract:
    """One contract per distinct inventory: most conversations have the runtime's, and a
    contract's indexes are bigger than the rest of an idle conversation. A conversation
    keeps a weak reference to its own (issue 21: one with commands of its own keeps none).
    """
    return SlashContract(
        commands=commands,
        interactive_only=interactive_only,
        host_commands=host,
        bot_username=bot_username,
        catalog=catalog,
    )
