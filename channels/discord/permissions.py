"""Permission requests as Discord buttons that only the user whose input asked can answer.

A button's ``custom_id`` (at most 100 characters) carries only a short key; what it stands
for (conversation, user, request, option) is kept here, bounded. A request dies with its
runtime session, so keys need not outlive the process.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import hikari
from hikari.api.special_endpoints import InteractionMessageBuilder
from hikari.impl.special_endpoints import MessageActionRowBuilder

from channels.text import shorten
from gateway.api import GatewayAPI, PermissionRequired

from .target import Target

log = logging.getLogger("slashgate.discord")

PREFIX = "slashgate:permission:"
KEPT = 1024  # buttons remembered; the oldest are forgotten first
ROW = 5  # buttons per action row
ROWS = 5  # action rows per message
LABEL = 80  # characters of a button label
TITLE = 1800  # characters of the request's title shown
_STYLES: dict[
    str,
    Literal[hikari.ButtonStyle.SUCCESS, hikari.ButtonStyle.DANGER, hikari.ButtonStyle.SECONDARY],
] = {
    "allow": hikari.ButtonStyle.SUCCESS,
    "reject": hikari.ButtonStyle.DANGER,
}


@dataclass(frozen=True, slots=True)
class Button:
    conversation: str
    user: str
    request_id: str
    option_id: str
    label: str


class Permissions:
    def __init__(self, gateway: GatewayAPI, channel: str) -> None:
        self.gateway = gateway
        self.channel = channel
        self._buttons: OrderedDict[str, Button] = OrderedDict()
        self._keys = itertools.count(1)

    def prompt(
        self, event: PermissionRequired, target: Target
    ) -> tuple[str, list[MessageActionRowBuilder]]:
        """The request's text and one button per option (up to 25)."""
        rows: list[MessageActionRowBuilder] = []
        for index, option in enumerate(event.options[: ROW * ROWS]):
            if index % ROW == 0:
                rows.append(MessageActionRowBuilder())
            label = shorten(option.name or option.option_id, LABEL)
            key = f"{PREFIX}{next(self._keys)}"
            self._remember(
                key,
                Button(target.conversation, target.user, event.request_id, option.option_id, label),
            )
            style = _STYLES.get(option.kind.split("_")[0], hikari.ButtonStyle.SECONDARY)
            rows[-1].add_interactive_button(style, key, label=label)
        return f"🔒 **{shorten(event.title, TITLE)}**", rows

    async def answer(self, interaction: hikari.ComponentInteraction) -> InteractionMessageBuilder:
        """The response to a click: the message without its buttons, saying what was chosen;
        or, for anyone else than the user who was asked, a note only they see.
        """
        button = self._buttons.get(interaction.custom_id)
        if button is None:
            return _update(interaction, "🔒 This request is no longer pending.")
        if str(interaction.user.id) != button.user:
            note = interaction.build_response(hikari.ResponseType.MESSAGE_CREATE)
            return (
                note.set_content(f"Only <@{button.user}> can answer this request.")
                .set_flags(hikari.MessageFlag.EPHEMERAL)
                .set_user_mentions(False)
            )
        answered = await self.gateway.answer_permission(
            self.channel, button.conversation, button.request_id, button.option_id
        )
        self._forget(button.request_id)
        if not answered:
            return _update(interaction, "🔒 This request is no longer pending.")
        return _update(interaction, f"{interaction.message.content}\n→ **{button.label}**")

    def _remember(self, key: str, button: Button) -> None:
        self._buttons[key] = button
        while len(self._buttons) > KEPT:
            self._buttons.popitem(last=False)

    def _forget(self, request_id: str) -> None:
        for key in [k for k, b in self._buttons.items() if b.request_id == request_id]:
            del self._buttons[key]


def _update(interaction: hikari.ComponentInteraction, content: str) -> InteractionMessageBuilder:
    update = interaction.build_response(hikari.ResponseType.MESSAGE_UPDATE)
    return update.set_content(shorten(content, 2000)).clear_components().set_user_mentions(False)
