"""``POST /slack/events``: events, slash commands and interactivity over HTTP, verified here
(Slack's signature, the gateway's strict JSON) and dispatched by bolt, every answer that is
not bolt's acknowledgement in the webhook channel's error shape.

A plain slash command (the hot path) skips bolt's dispatch once the app is authorized: it
is answered as bolt would answer it, by the same listener code.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote_plus

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from channels.endpoint import Answer, error_answer, media_type, route
from gateway.body import BodyError, header_bytes, parse_json

from .inputs import UNAVAILABLE, SlackInputs, refusal

log = logging.getLogger("slashgate.slack")

RETRY_AFTER = "1"  # seconds, in the 503 answered while the channel stops
STOPPING = "the gateway is stopping, retry later"
SIGNATURE_AGE = 60 * 5  # seconds: an older (or later) request timestamp is refused, as Slack says
ACKNOWLEDGED = Answer(200, b"", {"Content-Type": "text/plain"})
_CHARSET = re.compile(r";\s*charset=utf-8")


def _form(body: str) -> dict[str, str]:
    """``dict(parse_qsl(body, keep_blank_values=True))`` (as bolt parses a form), in about half
    its time: only names and values that are escaped are unquoted.
    """
    form = {}
    for pair in body.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "%" in name or "+" in name:
            name = unquote_plus(name)
        if "%" in value or "+" in value:
            value = unquote_plus(value)
        form[name] = value
    return form


def _bolt_answer(answered: BoltResponse) -> Answer:
    """Bolt's answer as its aiohttp adapter sends it (no cookies: they come only with bolt's
    OAuth flow, which the gateway does not run).
    """
    headers = answered.first_headers_without_set_cookie()
    default = "application/json" if answered.body.startswith("{") else "text/plain"
    sent = headers.pop("content-type", default)
    headers["Content-Type"] = _CHARSET.sub("", sent)
    return Answer(answered.status, answered.body.encode(), headers)


class EventsEndpoint:
    def __init__(
        self,
        app: AsyncApp,
        inputs: SlackInputs,
        signing_secret: str,
        max_body: int,
        authorized: Callable[[], Awaitable[bool]],
    ) -> None:
        self._app = app
        self._inputs = inputs
        self._signing = hmac.new(signing_secret.encode(), digestmod=hashlib.sha256)  # copied
        self._authorized = authorized
        self.handle = route(max_body, self._answer_request)  # the aiohttp route

    async def _answer_request(self, raw: bytes, request: web.Request) -> Answer:
        return await self.answer(raw, request.headers, request.query_string)

    async def answer(self, raw: bytes, headers: Mapping[str, str], query: str = "") -> Answer:
        """Events API, slash commands and interactivity: verified here, dispatched by bolt."""
        try:
            body = raw.decode("utf-8")
        except UnicodeDecodeError:
            return error_answer(400, "invalid_request", "request body is not UTF-8")
        if not self._signed(headers, raw):
            return error_answer(401, "unauthorized", "invalid or expired Slack signature")
        content_type = media_type(headers)
        command = _plain_command(content_type, body)
        if command is None:
            try:
                _check_json(content_type, body)
            except BodyError as exc:
                return error_answer(exc.status, exc.code, exc.message)
        # auth.test succeeded (answered from memory once it has); if not, bolt's authorization
        # answers the request, as it answers any other.
        if command is not None and await self._authorized():
            # Journaled, then acknowledged at once: the command runs after the answer is sent.
            refused = await self._command(command)
            if refused is None:  # acknowledged with an empty body: Slack shows nothing
                return ACKNOWLEDGED
            answered = refused
        else:
            try:
                bolt_request = AsyncBoltRequest(body=body, query=query, headers=dict(headers))
            except Exception:
                return error_answer(400, "invalid_request", "malformed Slack payload")
            answered = await self._app.async_dispatch(bolt_request)
        if answered.status == 503:  # stopping or not journaled: Slack delivers the event again
            reason = UNAVAILABLE if answered.body == UNAVAILABLE else STOPPING
            return error_answer(503, "service_unavailable", reason, {"Retry-After": RETRY_AFTER})
        if answered.status >= 500:  # bolt could not handle a signed but unexpected payload
            log.warning("Slack payload not processed (%s)", answered.status)
            return error_answer(400, "invalid_request", "unprocessable Slack payload")
        if answered.status >= 400:  # bolt's own refusal (no listener for it): in this shape too
            reason = HTTPStatus(answered.status).phrase
            return error_answer(answered.status, reason.lower().replace(" ", "_"), reason)
        return _bolt_answer(answered)

    def _signed(self, headers: Mapping[str, str], raw: bytes) -> bool:
        """Slack's v0 signature of the body as sent, at most five minutes old (compared in
        constant time), as slack_sdk's ``SignatureVerifier`` checks it.
        """
        stamp = headers.get("X-Slack-Request-Timestamp")
        if stamp is None or "X-Slack-Signature" not in headers:
            return False
        try:
            if abs(time.time() - int(stamp)) > SIGNATURE_AGE:
                return False
        except ValueError:  # a timestamp that is not a number
            return False
        mac = self._signing.copy()
        mac.update(b"v0:" + stamp.encode() + b":" + raw)
        # As bytes: compare_digest refuses a str with a character past ASCII (a 500, not a 401).
        sent = header_bytes(headers, "X-Slack-Signature")
        return hmac.compare_digest(b"v0=" + mac.hexdigest().encode(), sent)

    async def _command(self, command: dict[str, Any]) -> BoltResponse | None:
        """A slash command as bolt's dispatch takes it: the ``refuse_while_stopping``
        middleware, then ``on_command``, errors through ``on_error``. None: acknowledged.
        """
        if self._inputs.stopping:
            return BoltResponse(status=503)
        try:
            await self._inputs.on_command(command)
        except Exception as error:
            return refusal(error) or BoltResponse(status=500)
        return None


def _check_json(content_type: str, body: str) -> None:
    """The JSON bolt is about to parse (an event, or an interactivity ``payload``) read by the
    gateway's strict reading first: BodyError 400 naming a string that is not valid Unicode
    (a lone ``\\ud800``), which bolt's parser would let through to the agent.
    """
    if content_type == "application/json":
        parse_json(body.encode())
    elif "payload=" in body:
        payload = _form(body).get("payload")
        if payload is not None:
            parse_json(payload.encode())


def _plain_command(content_type: str, body: str) -> dict[str, str] | None:
    """A slash command's form, which bolt's dispatch would only hand to ``on_command``: no
    SSL check, no interactivity ``payload``.
    """
    if content_type != "application/x-www-form-urlencoded":
        return None
    form = _form(body)
    if "command" not in form or "payload" in form or "ssl_check" in form:
        return None
    return form
