"""The slash contract as the gateway applies it: which contract classifies an input (its
conversation's, or the gateway's commands only), what input that must not run is told, what
goes to the runtime for input that may, and the wording of failures.
"""

from __future__ import annotations

from typing import cast

from contract import (
    Catalog,
    Category,
    Classification,
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
        """The contract of ``conv``'s commands (the runtime's menu until its session lists
        its own), with the gateway's.
        """
        return conv.contract(self.base, bot_username, self._menus.inventory or ())

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
