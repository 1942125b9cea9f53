"""The OpenAPI description of the Slack route (Events API, slash commands, interactivity)."""

from __future__ import annotations

from channels.webhook.wire import ErrorOut
from gateway.openapi import Body, Operation, Param, Response

_ERROR = (Body(model=ErrorOut),)
_ANY = {"type": "object"}


def operations(path: str) -> tuple[Operation, ...]:
    return (
        Operation(
            "POST",
            path,
            "Slack events, slash commands and interactivity (HTTP mode), signed by Slack",
            "slack",
            {
                200: Response(
                    "Acknowledged (the work goes on in the background)",
                    (Body(schema=_ANY), Body("text/plain", schema={"type": "string"})),
                ),
                400: Response("Not UTF-8, or a payload Slack would not send", _ERROR),
                401: Response("Invalid or expired Slack signature", _ERROR),
                404: Response("Nothing in this app handles it", _ERROR),
                503: Response("Stopping: Slack delivers it again", _ERROR, {"Retry-After": "1"}),
            },
            request=(
                Body("application/x-www-form-urlencoded", schema=_ANY),
                Body(schema=_ANY),
            ),
            params=(
                Param("X-Slack-Signature", "header", "v0=<HMAC-SHA256>", required=True),
                Param(
                    "X-Slack-Request-Timestamp",
                    "header",
                    "Seconds since the epoch; at most five minutes old",
                    required=True,
                ),
            ),
        ),
    )
