"""``POST /v1/permissions/{id}``: a webhook client answers a permission request that it got as
an SSE ``permission`` event.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from channels.errors import error_body
from gateway.api import GatewayAPI


class PermissionAnswer(BaseModel):
    """``option`` is one of the request's ``option_id``s; null cancels the request."""

    model_config = ConfigDict(strict=True, extra="ignore")

    conversation: str = Field(min_length=1, max_length=256)
    option: str | None = Field(max_length=256)


async def answer(
    gateway: GatewayAPI, channel: str, request_id: str, body: PermissionAnswer
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and body of the answer."""
    offered = gateway.pending_permission(channel, body.conversation, request_id)
    if offered is None:
        return 404, error_body("not_pending", f"no pending permission request {request_id!r}")
    if body.option is not None and body.option not in offered:
        listed = ", ".join(sorted(offered))
        message = f"option must be one of: {listed} (or null to cancel)"
        return 400, error_body("invalid_request", message)
    if not await gateway.answer_permission(channel, body.conversation, request_id, body.option):
        message = f"permission request {request_id!r} is no longer pending"
        return 404, error_body("not_pending", message)
    return 200, {
        "conversation": body.conversation,
        "request_id": request_id,
        "option": body.option,
        "answered": True,
    }
