"""The parity corpus through Discord, as the umbrella command (``/agent command:...``) and as
the per-command registrations: the same classification, forwarded composer_input and
user-facing text as the webhook channel gives for the same input, in the same run.
"""

from __future__ import annotations

from typing import Any

import pytest

from channels.discord.commands import ARGUMENTS, TEXT, CommandList
from contract import Command
from tests.conftest import load_parity, parity_runtime
from tests.parity_check import same_as_webhook, watch, webhook

from .fake import fake_discord
from .harness import discord_gateway
from .interactions import USER, command

HEADER, CASES = load_parity()
INVENTORY = tuple(Command(**c) for c in HEADER["inventory"])
HOST = tuple(Command(**c) for c in HEADER["host_commands"])
REGISTERED = CommandList.build(HOST + INVENTORY, "agent").original
STRING = 3
ADDRESSED = (
    "depends on the Telegram bot username: a Discord command carries no @addressee, so the "
    "case does not arise on Discord"
)
PLAIN_TEXT = (
    "plain text is a message over Discord's Gateway connection, not a slash command (which "
    "always starts with /): its cases run in test_discord_plain_parity.py"
)
TRIMMED = "Discord trims the value of a string option: leading white space cannot reach the app"
ONE_LINE = "Discord's command options are typed on one line"


def umbrella(text: str) -> tuple[str, dict[str, str]] | str:
    """(command, options) of the umbrella form, or why the case cannot be typed that way."""
    if not text.startswith("/"):
        return TRIMMED if text.lstrip().startswith("/") else PLAIN_TEXT
    if "\n" in text:
        return ONE_LINE
    rest = text[1:]
    if rest != rest.lstrip():
        return TRIMMED
    return "agent", {TEXT: text if not rest or rest.startswith("/") else rest}


def per_command(text: str) -> tuple[str, dict[str, str]] | str:
    """(command, options) of the per-command form, or why the case cannot be typed that way."""
    if not text.startswith("/"):
        return TRIMMED if text.lstrip().startswith("/") else PLAIN_TEXT
    if "\n" in text:
        return ONE_LINE
    token = text.split()[0]
    name = token[1:]
    if REGISTERED.get(name) != name:
        return f"{token} is not a command this app registers in Discord (see docs/discord.md)"
    rest = text[len(token) :]
    if rest[1:] != rest[1:].lstrip():
        return TRIMMED
    return name, ({ARGUMENTS: rest[1:]} if rest else {})


def params() -> list[Any]:
    out = []
    for index, case in enumerate(CASES):
        text = case["text"]
        for form, build in (("umbrella", umbrella), ("command", per_command)):
            case_id = f"{index:02d}-{form}"
            typed = ADDRESSED if "@gw_bot" in text or "@other_bot" in text else build(text)
            marks = [pytest.mark.skip(typed)] if isinstance(typed, str) else []
            out.append(pytest.param(case, form, id=case_id, marks=marks))
    return out


@pytest.mark.parametrize(("case", "form"), params())
async def test_parity_case_through_discord(gateway_server, monkeypatch, case, form):
    text = case["text"]
    async with (
        fake_discord() as fake,
        discord_gateway(
            gateway_server,
            fake,
            parity_runtime(),
            interactive_only=HEADER["interactive_only"],
            discord_owners=[USER],  # an owner's /help lists /new in a server channel
        ) as h,
    ):
        seen = watch(monkeypatch, h.server.gateway, "discord")
        web = await webhook(h.discord.session, h.server.url, text)
        name, options = (umbrella if form == "umbrella" else per_command)(text)  # type: ignore[misc]
        payload = command(name, *((n, STRING, v) for n, v in options.items()))
        status, _ = await h.interact(payload)
        assert status == 200
        replies = await h.replies(payload["token"])

    outcome = same_as_webhook(seen, web, case)
    # What the user sees: the same text (Discord renders the Markdown), only for them when
    # it is a rejection or a gateway command's answer.
    [reply] = replies
    assert reply.content == web["reply"]["text"]
    private = web["reply"]["category"] is not None or outcome.classification.source == "gateway"
    assert reply.ephemeral == private
