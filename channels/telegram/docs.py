"""The OpenAPI description of the Telegram webhook route."""

from __future__ import annotations

from pydantic import BaseModel

from gateway.openapi import Body, Operation, Param, Response


class TelegramAnswer(BaseModel):
    """What the webhook answers Telegram: ``ok``, and why not when it is false."""

    ok: bool
    description: str | None = None


def operations(path: str, secret_header: str) -> tuple[Operation, ...]:
    answer = (Body(model=TelegramAnswer),)
    return (
        Operation(
            "POST",
            path,
            "Telegram updates (webhook mode), as the Bot API delivers them",
            "telegram",
            {
                200: Response("Taken in (processed in the background)", answer),
                400: Response("Not JSON, or not an Update", answer),
                401: Response(f"Missing or wrong {secret_header}", answer),
                413: Response("Update over webhook_max_body bytes", answer),
                503: Response(
                    "Stopping or full: Telegram delivers it again", answer, {"Retry-After": "1"}
                ),
            },
            request=(Body(schema={"type": "object", "description": "A Telegram Update"}),),
            params=(
                Param(
                    secret_header,
                    "header",
                    "The secret_token given to setWebhook (telegram_secret)",
                    required=True,
                ),
            ),
        ),
    )
