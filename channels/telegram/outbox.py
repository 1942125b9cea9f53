"""What every reply of the channel shares: the bot, the pacing (previews' cadence per chat,
Telegram's limits), the permission prompts, and what the server turned out to support. Below
the sink and the activity message, so that neither needs the channel.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiogram import Bot

from .delivery import Throttle
from .pacing import TelegramPacing
from .permissions import Permissions


@dataclass
class Outbox:
    bot: Bot
    throttle: Throttle  # previews and activity edits: at most one per edit interval per chat
    pacing: TelegramPacing  # every message sent or edited: Telegram's limits
    permissions: Permissions
    show_reasoning: bool  # the activity message quotes the agent's reasoning
    drafts: bool = True  # sendMessageDraft available (until the server says otherwise)
