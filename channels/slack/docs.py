"""The OpenAPI description of the Slack route (Events API, slash commands, interactivity)."""

from __future__ import annotations

from channels.signed import ANY, signed_post
from gateway.openapi import Body, Operation, Response


def operations(path: str) -> tuple[Operation, ...]:
    answered = Response(
        "Acknowledged (the work goes on in the background)",
        (Body(schema=ANY), Body("text/plain", schema={"type": "string"})),
    )
    refused = {
        400: "Not UTF-8, or a payload Slack would not send",
        401: "Invalid or expired Slack signature",
        404: "Nothing in this app handles it",
    }
    return (
        signed_post(
            path,
            "Slack events, slash commands and interactivity (HTTP mode), signed by Slack",
            "slack",
            answered,
            refused,
            "Stopping: Slack delivers it again",
            ("X-Slack-Signature", "v0=<HMAC-SHA256>"),
            ("X-Slack-Request-Timestamp", "Seconds since the epoch; at most five minutes old"),
            request=(Body("application/x-www-form-urlencoded", schema=ANY), Body(schema=ANY)),
        ),
    )
