"""The OpenAPI description of the webhook channel's routes, from its wire models."""

from __future__ import annotations

from channels.errors import ErrorOut
from gateway.openapi import Body, Operation, Param, Response

from .permissions import PermissionAnswer
from .wire import SSE_EVENTS, AgentOut, ClassifyIn, CommandsOut, MessageIn, MessageOut

_ERROR = (Body(model=ErrorOut),)
_OBJECT = (Body(schema={"type": "object"}),)
_NOT_JSON = Response("A Content-Type other than application/json", _ERROR)
_TEXT = {"type": "string"}
_USER = Param(
    "user",
    "query",
    "The user who asks (as in POST /v1/messages): owner-only commands are left out unless "
    "they are one of webhook_owners",
)
# The fields of MessageIn as form fields, and files (each part with a filename is a file).
_FORM = Body(
    "multipart/form-data",
    schema={
        "type": "object",
        "required": ["conversation", "user"],
        "properties": {
            "conversation": {**_TEXT, "minLength": 1, "maxLength": 256},
            "user": {**_TEXT, "minLength": 1, "maxLength": 256},
            "text": _TEXT,
            "id": {**_TEXT, "maxLength": 256},
            "file": {"type": "array", "items": {"type": "string", "format": "binary"}},
        },
    },
)
_EVENTS = """With `Accept: text/event-stream` the answer is server-sent events, each
`event: <name>` and `data: <JSON>`: `accepted` first (also for rejected input), `delta` as the
runtime streams text, `tool`, `permission`, `status`, `plan`, `reasoning` and `usage` when the
runtime sends them, and
`reply` last with the whole answer. `x-events` names the schema of each event's data."""


def operations(bearer: bool) -> tuple[Operation, ...]:
    """``bearer``: the routes need ``Authorization: Bearer <token>`` (webhook_token is set)."""
    refused = {401: Response("Missing or wrong bearer token", _ERROR)} if bearer else {}
    return (
        Operation(
            "POST",
            "/v1/messages",
            "Send one input through the slash contract and, if it may run, the runtime",
            "webhook",
            {
                200: Response(
                    "The classification, what was forwarded, and the reply",
                    (
                        Body(model=MessageOut),
                        Body("text/event-stream", schema={"type": "string"}, events=SSE_EVENTS),
                    ),
                    {"Idempotent-Replayed": "`true` when this is the first answer again"},
                ),
                400: Response(
                    "Malformed JSON, not an object, invalid fields, text that is not valid "
                    "Unicode (invalid_text), or an Idempotency-Key that is not printable ASCII",
                    _ERROR,
                ),
                409: Response("The first request with this Idempotency-Key failed", _ERROR),
                413: Response("Body over webhook_max_body bytes", _ERROR),
                415: Response(
                    "A Content-Type other than application/json and multipart/form-data "
                    "(text/plain and forms are refused), or a Content-Encoding other than "
                    "gzip, deflate, identity",
                    _ERROR,
                ),
                422: Response("Idempotency-Key already used with another body", _ERROR),
                503: Response("The state store is unavailable: retry", _ERROR),
                **refused,
            },
            request=(Body(model=MessageIn), _FORM),
            params=(
                Param(
                    "Accept",
                    "header",
                    "`text/event-stream` for server-sent events; JSON otherwise",
                ),
                Param(
                    "Idempotency-Key",
                    "header",
                    "A repeated request with the same key (printable ASCII) gets the first "
                    "answer again (header `Idempotent-Replayed: true`) without running twice",
                ),
            ),
            bearer=bearer,
            description=_EVENTS,
        ),
        Operation(
            "GET",
            "/v1/commands",
            "The effective command inventory (of one conversation, when given)",
            "webhook",
            {
                200: Response("The commands", (Body(model=CommandsOut),)),
                400: Response("A parameter too long", _ERROR),
                **refused,
            },
            params=(
                Param(
                    "conversation",
                    "query",
                    "A conversation id: its dynamic commands are included",
                ),
                _USER,
            ),
            bearer=bearer,
        ),
        Operation(
            "GET",
            "/v1/agent",
            "The agent behind the gateway: its name, runtime, version and description",
            "webhook",
            {200: Response("The agent", (Body(model=AgentOut),)), **refused},
            bearer=bearer,
        ),
        Operation(
            "GET",
            "/v1/complete",
            "What fits at the cursor: commands ranked by prefix then fuzzy, or references",
            "webhook",
            {
                200: Response("The completion (docs/webchat.md)", _OBJECT),
                400: Response("Invalid parameters", _ERROR),
                **refused,
            },
            params=(
                Param("conversation", "query", "Its dynamic commands are included"),
                _USER,
                Param("text", "query", "The composer's text"),
                Param(
                    "cursor",
                    "query",
                    "Cursor position in UTF-16 code units; the end when left out",
                    schema={"type": "integer", "minimum": 0},
                ),
                Param(
                    "limit",
                    "query",
                    "Most items answered (1-200)",
                    schema={"type": "integer", "minimum": 1, "maximum": 200},
                ),
            ),
            bearer=bearer,
        ),
        Operation(
            "POST",
            "/v1/classify",
            "The classification and payload POST /v1/messages would give; nothing runs",
            "webhook",
            {
                200: Response("The preview (docs/webchat.md)", _OBJECT),
                400: Response("Malformed JSON, or invalid fields", _ERROR),
                415: _NOT_JSON,
                **refused,
            },
            request=(Body(model=ClassifyIn),),
            bearer=bearer,
        ),
        Operation(
            "POST",
            "/v1/permissions/{request_id}",
            "Answer a permission request a turn is waiting on (SSE `permission` event)",
            "webhook",
            {
                200: Response("Answered", _OBJECT),
                400: Response("Invalid body, or an option the request did not offer", _ERROR),
                404: Response("No such request pending in that conversation", _ERROR),
                415: _NOT_JSON,
                **refused,
            },
            request=(Body(model=PermissionAnswer),),
            params=(Param("request_id", "path", "The id from the `permission` event"),),
            bearer=bearer,
        ),
    )
