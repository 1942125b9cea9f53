"""Webhook mode: the endpoint Telegram posts updates to (checked against the secret token,
refused with 503 while busy or stopping so that Telegram delivers them again), and its
registration with setWebhook.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Mapping

from aiogram import Bot
from aiogram.types import Update
from aiohttp import web
from pydantic import ValidationError

from channels.endpoint import Answer, json_answer, response
from gateway.api import StoreUnavailable
from gateway.body import BodyError, header_bytes, parse_json, read_body
from gateway.openapi import document

from .docs import operations
from .intake import UPDATES, Intake

log = logging.getLogger("slashgate.telegram")

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


class Webhook:
    def __init__(
        self, bot: Bot, intake: Intake, secret: bytes, max_body: int, closing: Callable[[], bool]
    ) -> None:
        self.bot = bot
        self.intake = intake
        self.secret = secret
        self.max_body = max_body
        self.closing = closing  # the channel or the gateway is stopping: no new updates
        self.registered = False  # setWebhook has answered

    def mount(self, app: web.Application) -> None:
        app.router.add_post(WEBHOOK_PATH, self.receive)
        document(app, *operations(WEBHOOK_PATH, SECRET_HEADER))

    async def register(self, url: str) -> None:
        await self.bot.set_webhook(
            url, secret_token=self.secret.decode(), allowed_updates=list(UPDATES)
        )
        self.registered = True

    async def receive(self, request: web.Request) -> web.Response:
        """The aiohttp route: the secret and the load checked before the body is read."""
        refused = self.refusal(request.headers)
        if refused is None:
            try:
                body = await read_body(request, self.max_body)
            except BodyError as exc:
                refused = _error(exc.status, exc.message)
            else:
                return response(await self.take(body))
        return response(refused)

    async def answer(self, body: bytes, headers: Mapping[str, str]) -> Answer:
        """An update as Telegram posts it (the body as sent, the secret token header)."""
        return self.refusal(headers) or await self.take(body)

    def refusal(self, headers: Mapping[str, str]) -> Answer | None:
        """401 without the secret; 503 while stopping or full (Telegram delivers it again)."""
        if not hmac.compare_digest(header_bytes(headers, SECRET_HEADER), self.secret):
            return _error(401, "missing or wrong X-Telegram-Bot-Api-Secret-Token")
        if self.closing() or self.intake.slots.locked():
            return _error(503, "busy, retry later", headers=RETRY)
        return None

    async def take(self, body: bytes) -> Answer:
        """An update read by aiogram's model and handed to the intake."""
        try:
            update = Update.model_validate_json(body, context={"bot": self.bot})
        except ValidationError as exc:
            if exc.errors()[0]["type"] != "json_invalid":
                return _error(400, "request body is not an update")
            try:  # the shared reading says why: a lone surrogate's field, say
                parse_json(body)
            except BodyError as problem:
                if problem.code == "invalid_text":
                    return _error(400, problem.message)
            return _error(400, "request body is not JSON")
        try:
            # The intake journals the text as it came (valid UTF-8: the parser checked).
            await self.intake.take(update, body.decode())
        except StoreUnavailable as exc:  # not journaled: Telegram must deliver it again
            log.warning("update %d not taken: %s", update.update_id, exc)
            return _error(503, "the gateway's store is unavailable", headers=RETRY)
        return TAKEN


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Answer:
    """Telegram's own error shape, which its Bot API answers with."""
    return json_answer({"ok": False, "description": message}, status, headers)


RETRY = {"Retry-After": "1"}
TAKEN = json_answer({"ok": True})
