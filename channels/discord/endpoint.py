"""``POST /discord/interactions``: the signature checked first (401, nothing run), then the
interaction's fields read by one typed model (wire.py: one not as Discord sends it is a 400
that says why, logged on one line as every 4xx is), then by hikari's entity factory, and
answered with its response builders: PING with PONG, a command with a deferred response (it
runs after), autocomplete with choices, a permission button with the message it updates.

Every answer that is not Discord's is in the webhook channel's error shape.
"""

from __future__ import annotations

import logging
from typing import Any

import hikari
from aiohttp import web
from hikari.api import EntityFactory
from hikari.api.special_endpoints import InteractionResponseBuilder

from channels.errors import error_body
from gateway.api import StoreUnavailable
from gateway.body import BodyError, parse_json, read_body

from .autocomplete import Completer
from .inputs import DiscordInputs, Invocation
from .permissions import Permissions
from .signature import Verifier
from .wire import Called, Unreadable, read

log = logging.getLogger("slashgate.discord")

PATH = "/discord/interactions"
PING, PONG = 1, 1
RETRY_AFTER = "1"  # seconds, in the 503 answered while the channel stops
UNAVAILABLE = "The gateway's store is unavailable: nothing was run. Try again in a moment."


def _failure(exc: Exception) -> str:
    """What hikari could not read, on one line and short (it quotes the sender's values)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= 200 else text[:199] + "…"


def _error(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response(error_body(code, message), status=status, headers=headers)


class InteractionsEndpoint:
    def __init__(
        self,
        verifier: Verifier,
        entities: EntityFactory,
        inputs: DiscordInputs,
        permissions: Permissions,
        completer: Completer,
        max_body: int,
    ) -> None:
        self._verifier = verifier
        self._entities = entities
        self._inputs = inputs
        self._permissions = permissions
        self._completer = completer
        self._max_body = max_body

    async def handle(self, request: web.Request) -> web.Response:
        try:
            raw = await read_body(request, self._max_body)
        except BodyError as exc:
            return _error(exc.status, exc.code, exc.message)
        if not self._verifier.signed(request, raw):
            return _error(401, "unauthorized", "invalid or expired Discord signature")
        try:
            payload = parse_json(raw)
        except BodyError as exc:
            return _error(exc.status, exc.code, exc.message)
        # JSON's true is an int to isinstance, and would be a PING.
        if not isinstance(payload, dict) or type(payload.get("type")) is not int:
            return _error(400, "invalid_request", "not a Discord interaction")
        if payload["type"] == PING:  # Discord checks the endpoint with it
            return web.json_response({"type": PONG})
        if self._inputs.stopping:
            return _error(
                503, "service_unavailable", "the gateway is stopping", {"Retry-After": RETRY_AFTER}
            )
        try:
            fields = read(payload)
            if fields is None:
                return _error(400, "invalid_request", "an interaction this gateway does not take")
            interaction = self._entities.deserialize_interaction(payload)
        except Exception as exc:  # signed, but not an interaction as Discord sends them
            # The reason is in the answer, and so in the server's one line for a 4xx.
            said = str(exc) if isinstance(exc, Unreadable) else _failure(exc)
            return _error(400, "invalid_request", f"unprocessable Discord interaction: {said}")
        if isinstance(interaction, hikari.CommandInteraction) and isinstance(fields, Called):
            invocation = self._inputs.read(fields)
            response = await self._command(interaction, invocation, payload)
        elif isinstance(interaction, hikari.AutocompleteInteraction) and isinstance(fields, Called):
            response = interaction.build_response(await self._completer.choices(fields))
        elif isinstance(interaction, hikari.ComponentInteraction):
            response = await self._permissions.answer(interaction)
        else:
            return _error(400, "invalid_request", "an interaction this gateway does not take")
        body, _ = response.build(self._entities)
        return web.json_response(body)

    async def _command(
        self,
        interaction: hikari.CommandInteraction,
        invocation: Invocation,
        payload: dict[str, Any],
    ) -> InteractionResponseBuilder:
        """Journaled, then deferred: the reply edits the deferred response."""
        try:
            await self._inputs.accept(invocation, payload)
        except StoreUnavailable as exc:  # Discord never delivers an interaction again
            log.warning("a Discord interaction was not taken: %s", exc)
            told = interaction.build_response().set_content(UNAVAILABLE)
            return told.set_flags(hikari.MessageFlag.EPHEMERAL)
        deferred = interaction.build_deferred_response()
        if invocation.target.ephemeral:
            deferred.set_flags(hikari.MessageFlag.EPHEMERAL)
        return deferred
