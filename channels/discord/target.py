"""Where one interaction's replies go: its application, token and user."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    application: int
    token: str  # the interaction's token: valid for 15 minutes, the webhook of its replies
    conversation: str  # the Discord channel
    user: str
    ephemeral: bool  # the deferred response is shown only to the user
