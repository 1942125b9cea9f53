"""Permission requests as Slack buttons: the prompt (one button per option, the request in
each button's value), and the answer to a click, only from the user whose input asked.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from aiohttp import ClientSession

from channels.text import shorten
from contract import utf16_len
from gateway.api import GatewayAPI, PermissionOption, PermissionRequired

from .mrkdwn import SECTION_LIMIT, escape
from .target import Target
from .web import respond

log = logging.getLogger("slashgate.slack")

PERMISSION_ACTION = "slashgate_permission"


def permission_title(event: PermissionRequired) -> str:
    """The request's title, escaped and cut so that ``:lock: *title*`` fits a section."""
    return shorten(escape(event.title), SECTION_LIMIT - utf16_len(":lock: **"))


def permission_blocks(event: PermissionRequired, target: Target) -> list[dict[str, Any]]:
    """The request as a section and one button per option; the value carries the request."""
    buttons = [_button(index, option, event, target) for index, option in enumerate(event.options)]
    section = {"type": "mrkdwn", "text": f":lock: *{permission_title(event)}*"}
    return [
        {"type": "section", "text": section},
        {"type": "actions", "block_id": PERMISSION_ACTION, "elements": buttons[:25]},
    ]


def permission_text(event: PermissionRequired) -> str:
    """The request in words, options listed, for when Slack refuses its buttons."""
    options = "\n".join(f"• {escape(option.name or option.option_id)}" for option in event.options)
    return f":lock: *{permission_title(event)}*\n{options}"


def _button(
    index: int, option: PermissionOption, event: PermissionRequired, target: Target
) -> dict[str, Any]:
    value = {
        "c": target.conversation,
        "r": event.request_id,
        "o": option.option_id,
        "u": target.user,
    }
    button: dict[str, Any] = {
        "type": "button",
        "action_id": f"{PERMISSION_ACTION}:{index}",
        "text": {"type": "plain_text", "text": option.name[:75] or option.option_id[:75]},
        "value": json.dumps(value, separators=(",", ":")),
    }
    if option.kind.startswith("allow"):
        button["style"] = "primary"
    elif option.kind.startswith("reject"):
        button["style"] = "danger"
    return button


async def answer_permission(
    gateway: GatewayAPI,
    session: ClientSession | None,
    channel: str,
    body: dict[str, Any],
    action: dict[str, Any],
) -> None:
    """A click on a permission button of ``channel``: the answer to the gateway, then the
    prompt replaced by who chose what.
    """
    try:
        value = json.loads(str(action.get("value") or ""))
        conversation, request_id, option_id = value["c"], value["r"], value["o"]
    except (ValueError, KeyError, TypeError):
        log.warning("a permission button with an unreadable value")
        return
    user = (body.get("user") or {}).get("id")
    response_url = body.get("response_url")
    if value.get("u") and user != value["u"]:
        if response_url:
            await respond(
                session,
                response_url,
                {
                    "response_type": "ephemeral",
                    "replace_original": False,
                    "text": f"Only <@{value['u']}> can answer this request.",
                },
            )
        return
    answered = await gateway.answer_permission(channel, conversation, request_id, option_id)
    title = str((body.get("message") or {}).get("text") or ":lock: Permission request")
    choice = escape(str((action.get("text") or {}).get("text") or option_id))
    outcome = f"*{choice}* (<@{user}>)" if answered else "no longer pending"
    text = f"{title} — {outcome}"
    if response_url:
        await respond(session, response_url, {"replace_original": True, "text": text})
