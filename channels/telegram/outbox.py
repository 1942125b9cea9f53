"""What every reply of the channel shares: the bot, the pacing per chat, the permission
prompts, and what the server turned out to support. Below the sink and the activity message,
so that neither needs the channel.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiogram import Bot

from .delivery import Throttle
from .permissions import Permissions


@dataclass
class Outbox:
    bot: Bot
    throttle: Throttle  # edits and sends paced per chat
    permissions: Permissions
    show_reasoning: bool  # the activity message quotes the agent's reasoning
    drafts: bool = True  # sendMessageDraft available (until the server says otherwise)
