"""The OpenAPI description of a route a platform signs (Slack, Discord): any JSON in and
out, errors as the webhook's error body, a signature and a timestamp header required, and
503 while stopping.
"""

from __future__ import annotations

from collections.abc import Mapping

from channels.errors import ErrorOut
from gateway.openapi import Body, Operation, Param, Response

ERROR = (Body(model=ErrorOut),)
ANY = {"type": "object"}


def signed_post(
    path: str,
    summary: str,
    tag: str,
    answered: Response,
    refused: Mapping[int, str],
    stopping: str,
    signature: tuple[str, str],
    timestamp: tuple[str, str],
    request: tuple[Body, ...] = (Body(schema=ANY),),
) -> Operation:
    """``refused``: each error status and when it is answered; ``signature`` and
    ``timestamp``: each header's name and what it holds.
    """
    responses = {
        200: answered,
        **{status: Response(why, ERROR) for status, why in refused.items()},
        503: Response(stopping, ERROR, {"Retry-After": "1"}),
    }
    headers = tuple(
        Param(name, "header", what, required=True) for name, what in (signature, timestamp)
    )
    return Operation("POST", path, summary, tag, responses, request=request, params=headers)
