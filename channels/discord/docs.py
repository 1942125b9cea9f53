"""The OpenAPI description of the Discord route (interactions over HTTP)."""

from __future__ import annotations

from channels.signed import ANY, signed_post
from gateway.openapi import Body, Operation, Response

from .signature import SIGNATURE, TIMESTAMP


def operations(path: str) -> tuple[Operation, ...]:
    answered = Response(
        "The interaction response: PONG, a deferred message (the reply edits it), "
        "autocomplete choices or a message update",
        (Body(schema=ANY),),
    )
    refused = {
        400: "Not JSON, not UTF-8, not an interaction, or a field of a type Discord never sends",
        401: "Missing, invalid or expired Ed25519 signature",
        413: "Over webhook_max_body",
    }
    return (
        signed_post(
            path,
            "Discord interactions (commands, autocomplete, buttons), signed by Discord",
            "discord",
            answered,
            refused,
            "Stopping",
            (SIGNATURE, "Ed25519 signature (hex)"),
            (TIMESTAMP, "Seconds since the epoch; at most five minutes from the gateway's clock"),
        ),
    )
