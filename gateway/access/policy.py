"""The access policy of one channel as plain values, and the decisions made from it: whether a
sender may talk in a place, and whether they may run a command. No I/O: the records approved
at run time (``Book``) are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from ..inbound import InboundMessage
from .book import Book

# Why an input was refused: the label of slashgate_access_denied_total and the log line.
Reason = Literal[
    "dm_disabled",
    "group_disabled",
    "not_allowed",
    "group_not_allowed",
    "member_not_allowed",
    "pairing",
    "pairing_full",
    "pairing_waiting",
    "forbidden",
    "rate_limited",
]
# Gateway commands only owners run; /new only where others share the conversation.
OWNER_ONLY = frozenset(("mode", "pair"))
SHARED_OWNER_ONLY = frozenset(("new",))


@dataclass(frozen=True, slots=True)
class Policy:
    """``chat``: a channel whose senders are platform users (Telegram, Slack, Discord). The
    others (webhook, web chat) are reached with the gateway's token: everyone may talk there,
    and owners are the ``owners`` given (none: everyone is one).
    """

    chat: bool
    dm: str = "pairing"
    group: str = "allowlist"
    members: str = "anyone"
    allowed: frozenset[str] = frozenset()  # users and groups from the settings
    owners: frozenset[str] = frozenset()
    owner_commands: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Any, channel: str, chat: bool = True) -> Policy:
        """The policy a channel's settings give (``access_settings``' fields)."""

        def setting(name: str, default: Any = None) -> Any:
            return getattr(settings, f"{channel}_{name}", default)

        if not chat:
            return cls(
                chat=False,
                owners=frozenset(setting("owners", ())),
                owner_commands=tuple(setting("owner_commands", ())),
            )
        if setting("dm_policy") is None:
            raise TypeError(
                f"the {channel} channel's senders are a platform's users: its settings model "
                f"subclasses gateway.access.access_settings({channel!r}, ...) (docs/access.md), "
                'or its plug says access="token"'
            )
        return cls(
            chat=True,
            dm=setting("dm_policy"),
            group=setting("group_policy"),
            members=setting("group_members"),
            allowed=frozenset((*setting("allow_users"), *setting("allow_groups"))),
            owners=frozenset(setting("owners")),
            owner_commands=tuple(setting("owner_commands")),
        )

    def owned(self, book: Book) -> bool:
        """Whether the channel has an owner, configured or approved."""
        return bool(self.owners) or book.has_owner()

    def is_owner(self, book: Book, user: str) -> bool:
        if not self.chat and not self.owners:
            return True
        return user in self.owners or book.role(user) == "owner"

    def knows(self, book: Book, user: str) -> bool:
        return user in self.allowed or book.role(user) is not None or user in self.owners

    def refusal(self, book: Book, message: InboundMessage) -> Reason | None:
        """Why ``message``'s sender may not talk where they wrote; None when they may.
        "pairing": a stranger's direct message, for which a pairing code may be offered.
        """
        if not self.chat:
            return None
        user = message.user
        if message.direct:
            if self.dm == "disabled":
                return "dm_disabled"
            if self.dm == "open" or self.knows(book, user):
                return None
            return "pairing" if self.dm == "pairing" else "not_allowed"
        if self.group == "disabled":
            return "group_disabled"
        if self.group == "allowlist" and not any(
            g in self.allowed or book.role(g) is not None for g in message.groups
        ):
            return "group_not_allowed"
        if self.members == "allowlist" and not self.knows(book, user):
            return "member_not_allowed"
        return None

    def owner_only(self, command: str, shared: bool) -> bool:
        """Whether only owners run ``command`` (its canonical name) in a conversation that
        others share (``shared``) or not: what the menus hide from everyone else.
        """
        name = command.lower()
        return (
            name in OWNER_ONLY
            or (shared and name in SHARED_OWNER_ONLY)
            or any(fnmatchcase(name, pattern) for pattern in self.owner_commands)
        )
