"""The OpenAPI description of the Discord route (interactions over HTTP)."""

from __future__ import annotations

from channels.webhook.wire import ErrorOut
from gateway.openapi import Body, Operation, Param, Response

from .signature import SIGNATURE, TIMESTAMP

_ERROR = (Body(model=ErrorOut),)
_ANY = {"type": "object"}


def operations(path: str) -> tuple[Operation, ...]:
    return (
        Operation(
            "POST",
            path,
            "Discord interactions (commands, autocomplete, buttons), signed by Discord",
            "discord",
            {
                200: Response(
                    "The interaction response: PONG, a deferred message (the reply edits it), "
                    "autocomplete choices or a message update",
                    (Body(schema=_ANY),),
                ),
                400: Response("Not JSON, not UTF-8, or not an interaction", _ERROR),
                401: Response("Missing, invalid or expired Ed25519 signature", _ERROR),
                413: Response("Over webhook_max_body", _ERROR),
                503: Response("Stopping", _ERROR, {"Retry-After": "1"}),
            },
            request=(Body(schema=_ANY),),
            params=(
                Param(SIGNATURE, "header", "Ed25519 signature (hex)", required=True),
                Param(
                    TIMESTAMP,
                    "header",
                    "Seconds since the epoch; at most five minutes from the gateway's clock",
                    required=True,
                ),
            ),
        ),
    )
