"""The Slack app manifest for this gateway, built from the effective command inventory.

Slack's rules for slash commands (app manifest reference): the command includes its leading
``/``, is at most 32 characters, lowercase, without spaces; an app has at most 50. Names that
cannot be registered (``memory show``, ``skill:triage``) or that Slack keeps for itself
(``/status``, ``/remind``, ...) are left out: they stay reachable through the umbrella command
(``/agent status``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from contract import Command
from gateway.inventory import usage_hint

from .settings import SlackSettings

MAX_SLASH_COMMANDS = 50
MAX_COMMAND_LENGTH = 32  # including the leading "/"
MAX_DESCRIPTION = 2000
MAX_USAGE_HINT = 1000
EVENTS_PATH = "/slack/events"
# Conservative: lowercase letters, digits, "-" and "_" are what Slack's own commands use.
_SLACK_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
# Slack's built-in commands (and their aliases); an app cannot take them over.
RESERVED = frozenset(
    {
        "active", "apps", "archive", "away", "close", "collapse", "dm", "dnd", "expand",
        "feed", "feedback", "invite", "invite_people", "join", "keys", "kick",
        "leave", "me", "msg", "mute", "open", "part", "prefs", "remind", "remove", "rename",
        "s", "search", "shortcuts", "shrug", "star", "status", "topic", "who",
    }
)  # fmt: skip
BOT_EVENTS = ("app_mention", "message.im")
BOT_SCOPES = (
    "app_mentions:read",
    "chat:write",
    "commands",
    "files:read",
    "im:history",
    "reactions:write",
)


def slack_command_name(name: str) -> str | None:
    """``/name`` as Slack would register it, or None when Slack cannot or must not."""
    lowered = name.lower()
    command = "/" + lowered
    if (
        not _SLACK_NAME.fullmatch(lowered)
        or len(command) > MAX_COMMAND_LENGTH
        or lowered in RESERVED
    ):
        return None
    return command


def slash_commands(
    commands: Iterable[Command], umbrella: str, url: str | None
) -> list[dict[str, Any]]:
    """The umbrella command first, then every registrable command, up to Slack's cap."""
    entries = [
        _entry(
            "/" + umbrella,
            "Send a slash command to the agent: /" + umbrella + " deploy prod",
            "command [arguments]",
            url,
        )
    ]
    seen = {entries[0]["command"]}
    for command in commands:
        name = slack_command_name(command.name)
        if name is None or name in seen:
            continue
        if len(entries) == MAX_SLASH_COMMANDS:
            break
        seen.add(name)
        description = command.description or f"Run /{command.name}"
        entries.append(_entry(name, description, usage_hint(command.hint), url))
    return entries


def _entry(command: str, description: str, hint: str | None, url: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "command": command,
        "description": description[:MAX_DESCRIPTION],
        "should_escape": False,
    }
    if hint:
        entry["usage_hint"] = hint[:MAX_USAGE_HINT]
    if url:
        entry["url"] = url
    return entry


def request_url(settings: SlackSettings) -> str | None:
    """Where Slack posts events and commands; None in Socket Mode, which needs no URL."""
    if settings.slack_app_token is not None:
        return None
    if not settings.slack_public_url:
        raise ValueError(
            "slack_public_url is not set: the manifest needs the gateway's public https URL "
            "(SLASHGATE_SLACK_PUBLIC_URL), unless Slack uses Socket Mode (slack_app_token)"
        )
    return settings.slack_public_url.rstrip("/") + EVENTS_PATH


def build_manifest(
    commands: Iterable[Command], settings: SlackSettings, name: str = "slashgate"
) -> dict[str, Any]:
    """An app manifest (JSON form) for Slack's "Create New App -> From a manifest"."""
    socket_mode = settings.slack_app_token is not None
    url = request_url(settings)
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": True}
    if url:
        events["request_url"] = url
        interactivity["request_url"] = url
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": name,
            "description": "An agent in Slack: slash commands, mentions and direct messages.",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": False,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": name, "always_online": True},
            "slash_commands": slash_commands(commands, settings.slack_umbrella_command, url),
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }
