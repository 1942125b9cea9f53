"""The webhook's errors: every failure under /v1 answers with a JSON error body."""

from __future__ import annotations

from aiohttp import web

from channels.errors import error_body
from gateway.body import BodyError


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message

    def response(self) -> web.Response:
        return web.json_response(error_body(self.code, self.message), status=self.status)


def json_errors(request: web.Request, exc: Exception) -> web.Response | None:
    """Every failure under /v1 is a JSON error body; a bug is a 500 with no details leaked
    (the server's middleware asks this first: ``ERROR_ANSWERS``).
    """
    if not request.path.startswith("/v1/"):
        return None
    if isinstance(exc, ApiError):
        return exc.response()
    if isinstance(exc, BodyError):  # a header or a body the shared checks refused
        return web.json_response(error_body(exc.code, exc.message), status=exc.status)
    if not isinstance(exc, web.HTTPException) or exc.status < 400:
        return None
    code = exc.reason.lower().replace(" ", "_")
    headers = {k: v for k, v in exc.headers.items() if k.lower() == "allow"}
    return web.json_response(error_body(code, exc.reason), status=exc.status, headers=headers)
