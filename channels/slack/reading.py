"""An input as read from Slack (a message event, or a slash command's form): where its reply
goes, its text, its id and its files; the same reading when a journaled input runs again.
"""

from __future__ import annotations

from typing import Any

from .files import SlackFile, slack_files
from .markup import command_texts, normalize
from .target import Target

# An input as read from Slack: where its reply goes, its text, its id, and its files.
Received = tuple[Target, str, str | None, tuple[SlackFile, ...]]

_MESSAGE_SUBTYPES = {None, "file_share", "thread_broadcast"}
# What ``command_input`` reads of a slash command's form: all the journal keeps of it.
_COMMAND_FIELDS = (
    "command",
    "text",
    "channel_id",
    "user_id",
    "team_id",
    "response_url",
    "trigger_id",
)


def message_input(
    body: dict[str, Any], event: dict[str, Any], bot_user_id: str | None
) -> Received | None:
    """(where the reply goes, the text, the message ts, its files), or None: not for the
    bot.
    """
    user, channel, ts = event.get("user"), event.get("channel"), event.get("ts")
    if (
        event.get("bot_id")
        or event.get("subtype") not in _MESSAGE_SUBTYPES
        or not user
        or user == bot_user_id
        or not channel
        or not ts
    ):
        return None
    text = normalize(str(event.get("text") or ""), bot_user_id)
    files = slack_files(event)
    if not text.strip() and not files:
        return None
    # Replies go in the thread of the message. In a channel each thread is a conversation;
    # a direct message is one conversation (top level and threads), as a chat with a person.
    thread = str(event.get("thread_ts") or ts)
    direct = event.get("channel_type") == "im"
    team = event.get("team") or body.get("team_id")
    target = Target(
        channel=channel,
        user=user,
        conversation=channel if direct else f"{channel}:{thread}",
        team=team,
        thread_ts=thread,
        message_ts=ts,
    )
    return target, text, ts, files


def command_form(command: dict[str, Any]) -> dict[str, Any]:
    """What the journal keeps of a slash command: what ``command_input`` reads."""
    return {key: command[key] for key in _COMMAND_FIELDS if key in command}


def command_input(command: dict[str, Any], umbrella: str) -> Received | None:
    """A slash command (``umbrella``: the command that runs the one named in its text), or
    None when it lacks its name, channel or user.
    """
    name = str(command.get("command") or "").lower()
    channel, user = command.get("channel_id"), command.get("user_id")
    if not name or not channel or not user:
        return None
    source, invocation = command_texts(name, str(command.get("text") or ""), umbrella)
    # Slash commands cannot be typed in threads: they share the channel's conversation.
    target = Target(
        channel=channel,
        user=user,
        conversation=channel,
        team=command.get("team_id"),
        response_url=command.get("response_url"),
        invocation=invocation,
    )
    return target, source, command.get("trigger_id"), ()
