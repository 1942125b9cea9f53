"""The JSON error body of the gateway's HTTP routes (``{"error": {"code", "message"}}``): the
webhook's API, the platforms' endpoints (Slack, Discord) and the server's own refusals answer
a request they refuse with it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    code: str = Field(description="Machine-readable: malformed_json, too_large, unauthorized...")
    message: str


class ErrorOut(BaseModel):
    """Every 4xx (and 5xx) under /v1."""

    error: ErrorDetail


def error_body(code: str, message: str) -> dict[str, Any]:
    return ErrorOut(error=ErrorDetail(code=code, message=message)).model_dump(mode="json")
