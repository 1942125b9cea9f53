"""The checks a /v1 request passes: its bearer token, its body's size and shape, its files.
Each refusal is an ``ApiError``, a 4xx.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, SecretStr, ValidationError

from gateway.api import Channel
from gateway.attachments import AttachmentError
from gateway.body import BodyError, header_bytes, parse_json, read_body

from .errors import ApiError
from .files import RequestProblem, refusal
from .settings import WebhookSettings
from .wire import describe_validation_error

T = TypeVar("T")
Body = TypeVar("Body", bound=BaseModel)


class Bearer:
    """``Authorization: Bearer <webhook_token>``, when a token is set."""

    __slots__ = ("token",)

    def __init__(self, token: SecretStr | None) -> None:
        self.token = token.get_secret_value().encode() if token else None

    def check(self, headers: Mapping[str, str]) -> None:
        if self.token is None:
            return
        scheme, _, presented = header_bytes(headers, "Authorization").partition(b" ")
        ok = scheme.lower() == b"bearer" and hmac.compare_digest(presented.strip(), self.token)
        if not ok:
            raise ApiError(401, "unauthorized", "missing or wrong Authorization: Bearer token")


class Route:
    """What a /v1 route reads of its channel, and the checks of its requests."""

    def __init__(self, channel: Channel[WebhookSettings], bearer: Bearer) -> None:
        self.gateway, self.settings, self.name = channel.gateway, channel.settings, channel.name
        self.authorize = bearer.check

    async def read(self, request: web.Request, files: bool = False) -> bytes:
        """The JSON body, once its media type is JSON's (``files``: the route also takes a
        multipart form, which the caller reads).
        """
        if request.content_type != JSON:  # also when there is no Content-Type at all
            raise self.not_json(request.headers, files)
        try:
            return await read_body(request, self.settings.webhook_max_body)
        except BodyError as exc:
            raise ApiError(exc.status, exc.code, exc.message) from None

    def not_json(self, headers: Mapping[str, str], files: bool) -> ApiError:
        """The 415 of a body that is not sent as JSON, counted."""
        self.gateway.metrics.http_refused("content_type")
        return ApiError(415, "unsupported_media_type", _not_json(headers, files))


JSON = "application/json"


def _not_json(headers: Mapping[str, str], files: bool) -> str:
    """Why a body is refused: a browser sends text/plain, forms and no type at all to another
    site without asking first; JSON it must ask for (CORS), so only JSON is taken.
    """
    sent = headers.get("Content-Type")
    wanted = f"{JSON} (or multipart/form-data with files)" if files else JSON
    said = f"Content-Type {sent[:100]!r}" if sent else "no Content-Type"
    curl = sent is not None and "urlencoded" in sent  # what curl -d sends
    hint = "; curl -d needs -H 'Content-Type: application/json'" if curl else ""
    return f"the body must be sent as {wanted}, not with {said}{hint}"


def parse(body: bytes, model: type[Body]) -> Body:
    try:
        return model.model_validate_json(body)  # a good body: parsed and checked at once
    except ValidationError:
        pass  # a bad one is read again below, so that the error says what was wrong
    data = parse_json(body)
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_request", "request body must be a JSON object")
    return validate(model, data)


def validate(model: type[Body], data: dict[str, Any]) -> Body:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", describe_validation_error(exc)) from None


async def checked_files(reading: Awaitable[T]) -> T:
    """Files read or fetched; a refused one is the client's error (4xx), never a 5xx."""
    try:
        return await reading
    except RequestProblem as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None
    except AttachmentError as exc:
        raise ApiError(*refusal(exc), str(exc)) from None
