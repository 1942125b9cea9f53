"""The bolt app that dispatches what Slack sends (over HTTP and Socket Mode): each listener
acknowledges at once and leaves the work to the channel's inputs.

The app runs with ``process_before_response`` so that Slack gets its answer as soon as the
listener returns, without the polling of bolt's default ack path.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.response import BoltResponse

from .auth import Authorization
from .inputs import SlackInputs, refusal
from .permissions import PERMISSION_ACTION
from .web import web_client


def bolt_app(
    inputs: SlackInputs,
    api_base: str,
    signing_secret: str,
    authorization: Authorization,
) -> AsyncApp:
    # Bolt passes ``authorize`` its arguments by parameter name: a plain function, no self.
    async def authorize() -> AuthorizeResult:
        return await authorization.result()

    app = AsyncApp(
        name="slashgate",
        client=web_client(api_base, None),
        signing_secret=signing_secret,
        authorize=authorize,
        process_before_response=True,
        # The events endpoint has checked the signature already (Socket Mode needs none).
        request_verification_enabled=False,
        logger=logging.getLogger("slashgate.slack.bolt"),
    )
    _listen(app, inputs)
    return app


def _listen(app: AsyncApp, inputs: SlackInputs) -> None:
    # Bolt injects arguments by parameter name, so listeners are plain functions.
    @app.middleware
    async def refuse_while_stopping(
        response: BoltResponse, next_: Callable[[], Awaitable[None]]
    ) -> BoltResponse:
        """While the channel stops, no listener runs and nothing is acknowledged: over
        HTTP Slack gets a 503, over Socket Mode no ack; either way it delivers again later
        (to this gateway restarted, or to another one).
        """
        if inputs.stopping:
            return BoltResponse(status=503)
        await next_()
        return response

    @app.error
    async def on_error(error: Exception) -> BoltResponse | None:
        return refusal(error)

    @app.event("app_mention")
    async def on_mention(body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        await inputs.on_message(body, event, context.bot_user_id)

    @app.event("message")
    async def on_message(body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        if event.get("channel_type") == "im":  # channel messages come as app_mention
            await inputs.on_message(body, event, context.bot_user_id)

    @app.event(re.compile(".*"))
    async def on_other_event() -> None:
        """Acknowledged, so that Slack does not retry what this app does not handle."""

    @app.command(re.compile(".*"))
    async def on_command(ack: Any, command: dict[str, Any]) -> None:
        await inputs.on_command(command)  # journaled first: an error here is no ack
        await ack()

    @app.action(re.compile(f"^{PERMISSION_ACTION}:"))
    async def on_permission(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        await ack()
        inputs.on_permission(body, action)
