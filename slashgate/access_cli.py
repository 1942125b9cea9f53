"""``slashgate access``: the access records of the chat channels, in the configured store, while
the gateway runs (each replica honours a change within a second). docs/access.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

from gateway.access import Book, Books, Policy
from gateway.access.book import Role
from gateway.access.settings import IDS_OF
from gateway.settings import CoreSettings
from gateway.state import StateStore, StoreUnavailable, open_store

from .config import add_source_arguments
from .registry import chat_channels

APPROVED_EXIT = {"owner": 0, "allowed": 0, "already": 0, "expired": 1, "unknown": 1}


def add_parser(commands: Any) -> None:
    access = commands.add_parser(
        "access", help="who may talk on the chat channels: pending pairings, approvals"
    )
    actions = access.add_subparsers(dest="access_command", required=True)

    def action(name: str, help_: str, *args: str) -> None:
        parser = actions.add_parser(name, help=help_)
        for arg in args:
            parser.add_argument(arg)
        add_source_arguments(parser)

    action("list", "each chat channel's policy, owners and approved users and groups")
    action("pending", "the pairing requests waiting for approval")
    action(
        "approve",
        "approve a pairing code (the first approved sender becomes the owner)",
        "channel",
        "code",
    )
    action("allow", "let a user or group id talk (add --owner: as an owner)", "channel", "id")
    actions.choices["allow"].add_argument("--owner", action="store_true")
    action("revoke", "take back what approve or allow gave an id", "channel", "id")


def problem(args: argparse.Namespace, settings: CoreSettings) -> str | None:
    """A mistake in the call, said before the store is opened."""
    if settings.store == "memory":
        return (
            "the memory store keeps nothing another process can see: slashgate access works "
            "with store = sqlite or redis"
        )
    channel = getattr(args, "channel", None)
    if channel is None:
        return None
    known = chat_channels()
    if channel not in known:
        return f"{channel!r} is not a chat channel; the chat channels are {', '.join(known)}"
    id_ = getattr(args, "id", None)
    ids = IDS_OF[channel]
    if id_ is not None and not ids.pattern.fullmatch(id_):
        close = ids.closest(id_)
        return f"{id_!r} is not {ids.what}" + (f"; did you mean {close!r}?" if close else "")
    return None


def run(args: argparse.Namespace, settings: CoreSettings) -> int:
    try:
        return asyncio.run(_run(args, settings))
    except StoreUnavailable as exc:
        print(f"slashgate: the state store does not answer: {exc}", file=sys.stderr)
        return 1


async def _run(args: argparse.Namespace, settings: CoreSettings) -> int:
    store = open_store(settings)
    await store.open()
    try:
        return await _act(args, settings, store)
    finally:
        await store.close()


async def _act(args: argparse.Namespace, settings: CoreSettings, store: StateStore) -> int:
    books = Books(store, max_age=0)
    now = time.time()
    command = args.access_command
    if command == "list":
        for name in chat_channels():
            print(_listing(name, Policy.of(settings, name), await books.of(name)))
        return 0
    if command == "pending":
        for name in chat_channels():
            for code, request in (await books.of(name)).waiting(now).items():
                minutes = max(1, round((request["expires"] - now) / 60))
                print(f"{name} {code} from {request['sender']} (expires in {minutes} min)")
        return 0
    channel: str = args.channel
    if command == "approve":
        policy = Policy.of(settings, channel)
        outcome, sender = await books.change(
            channel, lambda book: book.approve(args.code, now, policy.owned(book))
        )
        print(_APPROVED[outcome](channel, sender))
        return APPROVED_EXIT[outcome]
    edit: Callable[[Book], bool]
    if command == "allow":
        role: Role = "owner" if args.owner else "allowed"
        edit = lambda book: book.allow(args.id, role)  # noqa: E731
        said = f"{channel}: {args.id} may talk" + (" (owner)" if args.owner else "")
    else:
        edit = lambda book: book.revoke(args.id)  # noqa: E731
        said = f"{channel}: {args.id} revoked"
    changed = await books.change(channel, edit)
    print(said if changed else f"{said} already (nothing changed)")
    if command == "revoke" and args.id in _configured(Policy.of(settings, channel)):
        print(f"note: {args.id} is also in the {channel} settings (allow_* or owners)")
    return 0


def _configured(policy: Policy) -> frozenset[str]:
    return policy.allowed | policy.owners


_APPROVED: dict[str, Callable[[str, str | None], str]] = {
    "owner": lambda c, s: f"{c}: approved {s}, the channel's first owner",
    "allowed": lambda c, s: f"{c}: approved {s}",
    "already": lambda c, s: f"{c}: {s} was approved already",
    "expired": lambda c, s: (
        f"{c}: that code expired; the sender gets a new one with their next message"
    ),
    "unknown": lambda c, s: f"{c}: no pairing request has that code",
}


def _listing(channel: str, policy: Policy, book: Book) -> str:
    def ids(values: Any) -> str:
        return ", ".join(sorted(values)) or "none"

    approved = {i for i, r in book.members.items() if r == "allowed"}
    owners = policy.owners | {i for i, r in book.members.items() if r == "owner"}
    return (
        f"{channel}: dm_policy={policy.dm} group_policy={policy.group} "
        f"group_members={policy.members}\n"
        f"  owners: {ids(owners)}\n"
        f"  allowed (settings): {ids(policy.allowed)}\n"
        f"  allowed (approved): {ids(approved)}"
    )
