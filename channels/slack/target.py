"""Where one input's replies go in Slack: shared by the channel, its sinks and their manners."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """Where one input's replies go."""

    channel: str
    user: str
    conversation: str
    team: str | None = None
    thread_ts: str | None = None  # None: the channel itself (slash commands)
    response_url: str | None = None  # slash commands: ephemeral rejections, fallback posting
    invocation: str | None = None  # a slash command as typed: its reply says who ran what
    message_ts: str | None = None  # the user's message (its reactions)
