"""``POST /discord/interactions``: the signature checked first (401, nothing run), then the
interaction's fields read by one typed model (wire.py: one not as Discord sends it is a 400
that says why, logged on one line as every 4xx is), then by hikari's entity factory, and
answered with its response builders: PING with PONG, a command with a deferred response (it
runs after), autocomplete with choices, a permission button with the message it updates.

Every answer that is not Discord's is in the webhook channel's error shape.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import hikari
from aiohttp import web
from hikari.api import EntityFactory
from hikari.api.special_endpoints import InteractionResponseBuilder

from channels.endpoint import Answer, error_answer, json_answer, route
from gateway.api import StoreUnavailable
from gateway.body import BodyError, parse_json

from .autocomplete import Completer
from .inputs import DiscordInputs
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
        self.handle = route(max_body, self._answer_request)  # the aiohttp route

    async def _answer_request(self, raw: bytes, request: web.Request) -> Answer:
        return await self.answer(raw, request.headers)

    async def answer(self, raw: bytes, headers: Mapping[str, str]) -> Answer:
        """An interaction as Discord sends it (the body as sent, its signature headers)."""
        if not self._verifier.signed(headers, raw):
            return error_answer(401, "unauthorized", "invalid or expired Discord signature")
        try:
            payload = parse_json(raw)
        except BodyError as exc:
            return error_answer(exc.status, exc.code, exc.message)
        # JSON's true is an int to isinstance, and would be a PING.
        if not isinstance(payload, dict) or type(payload.get("type")) is not int:
            return error_answer(400, "invalid_request", "not a Discord interaction")
        if payload["type"] == PING:  # Discord checks the endpoint with it
            return json_answer({"type": PONG})
        if self._inputs.stopping:
            return error_answer(
                503, "service_unavailable", "the gateway is stopping", {"Retry-After": RETRY_AFTER}
            )
        try:
            fields = read(payload)
            if fields is None:
                return error_answer(
                    400, "invalid_request", "an interaction this gateway does not take"
                )
            interaction = self._entities.deserialize_interaction(payload)
        except Exception as exc:  # signed, but not an interaction as Discord sends them
            # The reason is in the answer, and so in the server's one line for a 4xx.
            said = str(exc) if isinstance(exc, Unreadable) else _failure(exc)
            return error_answer(
                400, "invalid_request", f"unprocessable Discord interaction: {said}"
            )
        if isinstance(interaction, hikari.CommandInteraction) and isinstance(fields, Called):
            built = await self._command(interaction, fields, payload)
        elif isinstance(interaction, hikari.AutocompleteInteraction) and isinstance(fields, Called):
            built = interaction.build_response(await self._completer.choices(fields))
        elif isinstance(interaction, hikari.ComponentInteraction):
            built = await self._permissions.answer(interaction)
        else:
            return error_answer(400, "invalid_request", "an interaction this gateway does not take")
        body, _ = built.build(self._entities)
        return json_answer(body)

    async def _command(
        self,
        interaction: hikari.CommandInteraction,
        called: Called,
        payload: dict[str, Any],
    ) -> InteractionResponseBuilder:
        """Journaled, then deferred: the reply edits the deferred response."""
        try:
            invocation = await self._inputs.accept(called, payload)
        except StoreUnavailable as exc:  # Discord never delivers an interaction again
            log.warning("a Discord interaction was not taken: %s", exc)
            told = interaction.build_response().set_content(UNAVAILABLE)
            return told.set_flags(hikari.MessageFlag.EPHEMERAL)
        deferred = interaction.build_deferred_response()
        if invocation.target.ephemeral:
            deferred.set_flags(hikari.MessageFlag.EPHEMERAL)
        return deferred
