"""Plain HTTP on the gateway's server: ``POST /v1/messages`` (JSON or server-sent events),
and the routes a composer uses beside it.
"""

from __future__ import annotations

from aiohttp import web

from gateway.api import ERROR_ANSWERS, Channel, Entry, GatewayAPI, InboundMessage, Reply, ReplySink
from gateway.openapi import document

from .assist import Assist
from .checks import Bearer
from .docs import operations
from .errors import json_errors
from .messages import Messages
from .settings import WebhookSettings


class WebhookChannel(Channel[WebhookSettings]):
    name = "webhook"

    def __init__(self, gateway: GatewayAPI, settings: WebhookSettings) -> None:
        super().__init__(gateway, settings)
        self.bearer = Bearer(settings.webhook_token)
        self.messages = Messages(self, self.bearer)
        self.assist = Assist(self, self.bearer)

    def mount(self, app: web.Application) -> None:
        app[ERROR_ANSWERS].append(json_errors)
        app.router.add_post("/v1/messages", self.messages.post)
        app.router.add_get("/v1/commands", self.assist.get_commands)
        app.router.add_get("/v1/agent", self.assist.get_agent)
        app.router.add_get("/v1/complete", self.assist.get_complete)
        app.router.add_post("/v1/classify", self.assist.post_classify)
        app.router.add_post("/v1/permissions/{request_id}", self.assist.post_permission)
        document(app, *operations(bearer=self.bearer.token is not None))

    def describe(self) -> str:
        auth = "bearer token" if self.bearer.token else "no auth"
        return (
            "webhook (POST /v1/messages, GET /v1/commands, GET /v1/agent, GET /v1/complete, "
            f"POST /v1/classify, POST /v1/permissions; {auth})"
        )

    def links(self, base: str) -> list[tuple[str, str]]:
        return [("API", f"{base}/v1 (described at {base}/openapi.json)")]

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        return await self.messages.recovered(entry)


__all__ = ["Reply", "WebhookChannel"]
