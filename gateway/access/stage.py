"""The access stage: who may talk where (before routing), who may run what (asked by routing
and /help), per-sender limits, and pairing. Every refusal is logged once and counted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from contract import Command

from .. import logs
from ..inbound import InboundMessage
from ..metrics import Metrics
from ..settings import CoreSettings
from ..state import StateStore, StoreUnavailable
from .book import CODE_TTL
from .limits import Over, SenderLimits
from .policy import Policy, Reason
from .records import EMPTY, Books
from .shared import shared_buckets

log = logging.getLogger("slashgate.access")
_TOKEN_BASED = Policy(chat=False)

PAIRING_TEXT = (
    "Hello! This bot only talks to people its owner approved. Your pairing code is "
    "**{code}** (valid for {minutes} minutes). Send it to the bot's owner: they approve it "
    "with `/pair {code}` here, or `slashgate access approve {channel} {code}`."
)
APPROVED = {
    "owner": "Approved {sender}: they may talk to the bot now, as its owner (the first one).",
    "allowed": "Approved {sender}: they may talk to the bot now.",
    "already": "{sender} was approved already.",
    "expired": "That pairing code expired: ask for a new one by sending the bot a message.",
    "unknown": "No pairing request has that code.",
}


@dataclass(frozen=True, slots=True)
class Pairing:
    """A stranger's pairing reply."""

    text: str


Refusal = Reason | Over | Pairing


class Access:
    def __init__(self, settings: CoreSettings, store: StateStore, metrics: Metrics) -> None:
        self.books = Books(store)
        self.policies: dict[str, Policy] = {}
        self.chats: dict[str, Policy] = {}  # the channels whose senders the policy checks
        self.limits = SenderLimits(
            settings.sender_rate,
            settings.sender_burst,
            settings.sender_max_queued,
            shared=shared_buckets(
                store, settings.redis_prefix, settings.sender_rate, settings.sender_burst
            ),
        )
        self._metrics = metrics

    def configure(self, channel: str, policy: Policy) -> None:
        # A token channel without owners checks nothing: routing then skips the stage
        # altogether while no channel has a policy (the default webhook's hot path).
        if not (policy.chat or policy.owners or policy.owner_commands):
            self.policies.pop(channel, None)
            self.chats.pop(channel, None)
            return
        self.policies[channel] = policy
        if policy.chat:
            self.chats[channel] = policy
        else:
            self.chats.pop(channel, None)

    def policy(self, channel: str) -> Policy:
        return self.policies.get(channel, _TOKEN_BASED)

    def refused(self, message: InboundMessage, reason: Reason) -> None:
        """Log and count one refusal (never the text)."""
        self._metrics.access_denied(message.channel, reason)
        log.info("access refused", extra=logs.fields(sender=message.user, reason=reason))

    async def admit(self, message: InboundMessage, policy: Policy) -> Refusal | None:
        """None: the sender may talk here (and was counted in the limits: ``leave`` when
        done). Else a refusal already logged and counted: its reason (dropped in silence),
        ``Over`` (the limits), or the ``Pairing`` reply.
        """
        book = await self.books.of(message.channel)
        reason = policy.refusal(book, message)
        if reason == "pairing":
            now = time.time()
            # The book read within the second answers a stranger's repeats: no lease, no
            # write for each of them. A new code is asked for under the lease (checked again).
            why = book.no_code(message.user, now)
            text = None if why is not None else await self._pairing(message, now)
            if text is None:
                why = why or self.books.cached(message.channel).no_code(message.user, now)
                reason = why or "pairing_full"
            self.refused(message, reason)
            return Pairing(text) if text is not None else reason
        if reason is not None:
            self.refused(message, reason)
            return reason
        if not self.limits.active:
            return None
        over = await self.limits.take(f"{message.channel}:{message.user}")
        if over is not None:
            self.refused(message, "rate_limited")
            return over
        return None

    async def lets_talk(self, message: InboundMessage) -> bool:
        """Whether ``message``'s sender may talk where they wrote, asked before its files are
        fetched: a stranger's are not (no pairing code is given and nothing is counted here;
        ``admit`` does that).
        """
        policy = self.chats.get(message.channel)
        if policy is None:
            return True
        return policy.refusal(await self.books.of(message.channel), message) is None

    def leave(self, message: InboundMessage) -> None:
        """An admitted input is done: its sender is counted out (callers skip the call
        while ``limits.active`` is False: nobody was counted in).
        """
        self.limits.leave(f"{message.channel}:{message.user}")

    async def _pairing(self, message: InboundMessage, now: float) -> str | None:
        """A new code for a stranger, as the reply's text; None when none is given."""
        code = await self.books.change(
            message.channel, lambda book: book.request(message.user, message.key, now)
        )
        if code is None:
            return None
        minutes = round(CODE_TTL / 60)
        return PAIRING_TEXT.format(code=code, minutes=minutes, channel=message.channel)

    def summary(self, channel: str) -> str:
        """One line of the channel's effective policy (``slashgate check``, the start-up)."""
        policy = self.policy(channel)
        owners = ", ".join(sorted(policy.owners)) or "none configured"
        return (
            f"dm_policy={policy.dm} group_policy={policy.group} "
            f"group_members={policy.members} owners: {owners}"
        )

    def warnings(self, channel: str) -> list[str]:
        """What an operator should know of the channel's policy: each open door."""
        policy = self.policy(channel)
        found = []
        if policy.chat and policy.dm == "open":
            found.append(f"{channel}: dm_policy is open: anyone who finds the bot drives the agent")
        if policy.chat and policy.group == "open":
            found.append(f"{channel}: group_policy is open: the bot answers in any group")
        return found

    async def first_owner_hint(self, channel: str) -> str | None:
        """How to approve the first sender, while a pairing channel has no owner."""
        policy = self.policy(channel)
        if not policy.chat or policy.dm != "pairing" or policy.owned(await self.books.of(channel)):
            return None
        return (
            f"{channel}: no owner yet: send the bot a direct message, then approve the code it "
            f"answers with: slashgate access approve {channel} CODE (the first approved sender "
            "becomes the owner)"
        )

    async def is_owner(self, channel: str, user: str) -> bool:
        """Whether ``user`` owns ``channel`` (configured, or approved as one), from the book as
        read within the second; the copy at hand while the store does not answer.
        """
        policy = self.policy(channel)
        try:
            book = await self.books.of(channel) if policy.chat else EMPTY
        except StoreUnavailable:
            book = EMPTY
        return policy.is_owner(book, user)

    async def allow_group(self, channel: str, group: str, by: str) -> None:
        """Allow ``group``, as ``slashgate access allow`` does, because an owner (``by``)
        brought the bot there: under ``group_policy = "allowlist"`` it would otherwise be
        ignored where its owner asked for it. Revoked as any other (``access revoke``).
        """
        if await self.books.change(channel, lambda book: book.allow(group, "allowed")):
            log.info("access allowed", extra=logs.fields(group=group, by=by))

    def may_run(self, message: InboundMessage, command: str) -> bool:
        """Whether the sender may run ``command`` here (owner-only commands)."""
        policy = self.policies.get(message.channel, _TOKEN_BASED)
        if not policy.owner_only(command, not message.direct):
            return True  # anyone's command (the usual case): no book to read
        book = self.books.cached(message.channel) if policy.chat else EMPTY
        return policy.is_owner(book, message.user)

    def offered(self, message: InboundMessage, commands: Iterable[Command]) -> tuple[Command, ...]:
        """``commands`` less those the sender may not run (what /help lists to them)."""
        return tuple(c for c in commands if self.may_run(message, c.name))

    async def approve(self, channel: str, code: str) -> str:
        """``/pair CODE``: the reply's text."""
        policy = self.policy(channel)
        if not policy.chat:
            return "Pairing is for chat channels (Telegram, Slack, Discord); none here."
        now = time.time()
        outcome, sender = await self.books.change(
            channel, lambda book: book.approve(code, now, policy.owned(book))
        )
        if sender is not None:
            log.info("access approved", extra=logs.fields(sender=sender, role=outcome))
        return APPROVED[outcome].format(sender=sender)
