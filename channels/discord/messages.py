"""One interaction's messages through hikari's REST client: the original response edited or
deleted, follow-ups posted and edited. A failed call is logged (never with the token) and
answered False or None: the caller stops, since the rest of a reply with a hole misleads.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from typing import TypedDict

import hikari
from hikari.api.special_endpoints import ComponentBuilder

from .target import Target

log = logging.getLogger("slashgate.discord")

_NONE: Sequence[ComponentBuilder] = ()
# A message's buttons as hikari takes them: none given is UNDEFINED, not an empty list.
Components = Sequence[ComponentBuilder] | hikari.UndefinedType


class _Mentions(TypedDict):
    mentions_everyone: bool
    user_mentions: bool
    role_mentions: bool


# A reply quotes what the agent wrote: whatever it mentions, it pings nobody.
QUIET: _Mentions = {"mentions_everyone": False, "user_mentions": False, "role_mentions": False}


class Messages:
    def __init__(self, rest: hikari.api.RESTClient, target: Target) -> None:
        self.rest = rest
        self.target = target

    async def edit(
        self, content: str, components: Sequence[ComponentBuilder] | None = None
    ) -> bool:
        """Replace the original response's text (and its buttons, when given)."""
        edited = self.rest.edit_interaction_response(
            self.target.application,
            self.target.token,
            content,
            components=components if components is not None else hikari.UNDEFINED,
            **QUIET,
        )
        return await done(edited, "editing a Discord response")

    async def delete(self) -> bool:
        deleted = self.rest.delete_interaction_response(self.target.application, self.target.token)
        return await done(deleted, "deleting a Discord response")

    async def follow_up(
        self,
        content: str,
        ephemeral: bool,
        components: Sequence[ComponentBuilder] = _NONE,
    ) -> int | None:
        """Post a follow-up message; its id, or None when Discord refused it."""
        return await self._post(content, ephemeral, components or hikari.UNDEFINED)

    async def _post(self, content: str, ephemeral: bool, components: Components) -> int | None:
        message = self.rest.execute_webhook(
            self.target.application,
            self.target.token,
            content,
            components=components,
            flags=hikari.MessageFlag.EPHEMERAL if ephemeral else hikari.UNDEFINED,
            **QUIET,
        )
        return await posted(message, "a Discord follow-up")

    async def edit_follow_up(self, message: int, content: str) -> bool:
        edited = self.rest.edit_webhook_message(
            self.target.application, self.target.token, message, content, **QUIET
        )
        return await done(edited, "editing a Discord follow-up")

    async def delete_follow_up(self, message: int) -> bool:
        deleted = self.rest.delete_webhook_message(
            self.target.application, self.target.token, message
        )
        return await done(deleted, "deleting a Discord follow-up")


async def done(call: Awaitable[object], what: str) -> bool:
    """Whether ``call`` succeeded; a failure is logged as ``what`` failed."""
    try:
        await call
    except hikari.HikariError as exc:
        log.warning("%s failed: %s", what, why(exc))
        return False
    return True


async def posted(call: Awaitable[hikari.Message], what: str) -> int | None:
    """The id of the message ``call`` posts; None (logged as ``what`` failed) when refused."""
    try:
        message = await call
    except hikari.HikariError as exc:
        log.warning("%s failed: %s", what, why(exc))
        return None
    return int(message.id)


def why(exc: hikari.HikariError) -> str:
    """What went wrong, without the request's URL (the interaction token is in its path)."""
    if isinstance(exc, hikari.HTTPResponseError):
        return f"HTTP {int(exc.status)} {exc.message or ''}".rstrip()
    return type(exc).__name__
