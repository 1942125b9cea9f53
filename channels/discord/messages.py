"""One interaction's messages through hikari's REST client: the original response edited or
deleted, follow-ups posted and edited. A failed call is logged (never with the token) and
answered False or None: the caller stops, since the rest of a reply with a hole misleads.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import hikari
from hikari.api.special_endpoints import ComponentBuilder

from .target import Target

log = logging.getLogger("slashgate.discord")

ORIGINAL = "@original"
_NONE: Sequence[ComponentBuilder] = ()


class Messages:
    def __init__(self, rest: hikari.api.RESTClient, target: Target) -> None:
        self.rest = rest
        self.target = target

    async def edit(
        self, content: str, components: Sequence[ComponentBuilder] | None = None
    ) -> bool:
        """Replace the original response's text (and its buttons, when given)."""
        try:
            await self.rest.edit_interaction_response(
                self.target.application,
                self.target.token,
                content,
                components=components if components is not None else hikari.UNDEFINED,
                mentions_everyone=False,
                user_mentions=False,
                role_mentions=False,
            )
        except hikari.HikariError as exc:
            log.warning("editing a Discord response failed: %s", why(exc))
            return False
        return True

    async def delete(self) -> bool:
        try:
            await self.rest.delete_interaction_response(self.target.application, self.target.token)
        except hikari.HikariError as exc:
            log.warning("deleting a Discord response failed: %s", why(exc))
            return False
        return True

    async def follow_up(
        self,
        content: str,
        ephemeral: bool,
        components: Sequence[ComponentBuilder] = _NONE,
    ) -> int | None:
        """Post a follow-up message; its id, or None when Discord refused it."""
        try:
            message = await self.rest.execute_webhook(
                self.target.application,
                self.target.token,
                content,
                components=components or hikari.UNDEFINED,
                flags=hikari.MessageFlag.EPHEMERAL if ephemeral else hikari.UNDEFINED,
                mentions_everyone=False,
                user_mentions=False,
                role_mentions=False,
            )
        except hikari.HikariError as exc:
            log.warning("a Discord follow-up failed: %s", why(exc))
            return None
        return int(message.id)

    async def edit_follow_up(self, message: int, content: str) -> bool:
        try:
            await self.rest.edit_webhook_message(
                self.target.application,
                self.target.token,
                message,
                content,
                mentions_everyone=False,
                user_mentions=False,
                role_mentions=False,
            )
        except hikari.HikariError as exc:
            log.warning("editing a Discord follow-up failed: %s", why(exc))
            return False
        return True

    async def delete_follow_up(self, message: int) -> bool:
        try:
            await self.rest.delete_webhook_message(
                self.target.application, self.target.token, message
            )
        except hikari.HikariError as exc:
            log.warning("deleting a Discord follow-up failed: %s", why(exc))
            return False
        return True


def why(exc: hikari.HikariError) -> str:
    """What went wrong, without the request's URL (the interaction token is in its path)."""
    if isinstance(exc, hikari.HTTPResponseError):
        return f"HTTP {int(exc.status)} {exc.message or ''}".rstrip()
    return type(exc).__name__
