"""The parity corpus through Slack, as the umbrella command, as per-command registrations and
as mentions: the same classification, forwarded composer_input and user-facing text as the
webhook channel gives for the same input, in the same run.
"""

from __future__ import annotations

from typing import Any

import pytest

from channels.slack.manifest import build_manifest
from channels.slack.mrkdwn import escape, to_mrkdwn
from contract import Command
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext, InboxWake
from tests.conftest import load_parity, make_settings
from tests.parity_check import same_as_webhook, watch, webhook
from tests.slack.slack_fake import WAIT, fake_slack, mention
from tests.slack.slack_harness import shown, slack_gateway

HEADER, CASES = load_parity()
INVENTORY = tuple(Command(**c) for c in HEADER["inventory"])
HOST = tuple(Command(**c) for c in HEADER["host_commands"])
TELEGRAM_ONLY = (
    "depends on the Telegram bot username: a Slack command token carries no @addressee, "
    "so the case does not arise on Slack"
)
PLAIN_TEXT = "plain text reaches the agent by mention or direct message, not by a slash command"
TRIMMED = "Slack trims the text of a slash command, so leading white space cannot reach the app"
USAGE = "the umbrella command alone answers its usage (test_slack_commands)"
# The commands this app registers in Slack: what the per-command form can be typed with.
MANIFEST = build_manifest(
    HOST + INVENTORY, make_settings(slack_public_url="https://gw.example.com")
)
REGISTERED = {c["command"] for c in MANIFEST["features"]["slash_commands"]}


async def reply(ctx: HandlerContext) -> None:
    """Deterministic: echo what arrived, so the reply shows the forwarded source."""
    if isinstance(ctx.wake, InboxWake):
        await ctx.reply("got: " + ctx.wake.message.payload["source"])


def runtime() -> EmbeddedRuntime:
    return EmbeddedRuntime(EntityDefinition(type="parity", handler=reply, slash_commands=INVENTORY))


def umbrella(text: str) -> tuple[str, str] | str:
    """(command, text) of the umbrella form, or why the case cannot be typed that way."""
    if not text.startswith("/"):
        return PLAIN_TEXT
    rest = text[1:]
    if rest != rest.lstrip():
        return TRIMMED
    if not rest:
        return USAGE
    return "/agent", text if rest.startswith("/") else rest


def per_command(text: str) -> tuple[str, str] | str:
    """(command, text) of the per-command form, or why the case cannot be typed that way."""
    if not text.startswith("/"):
        return PLAIN_TEXT if text == text.lstrip() else TRIMMED
    token = text.split()[0]
    if token not in REGISTERED:
        return f"{token} is not a command this app registers in Slack (see the manifest rules)"
    rest = text[len(token) :]
    if rest and not rest.startswith(" "):
        return "Slack separates a command from its text with a space"
    if rest[1:] != rest[1:].lstrip():
        return TRIMMED
    return token, rest[1:]


def params() -> list[Any]:
    out = []
    for index, case in enumerate(CASES):
        text = case["text"]
        for form, build in (("mention", None), ("umbrella", umbrella), ("command", per_command)):
            case_id = f"{index:02d}-{form}"
            if "@gw_bot" in text or "@other_bot" in text:
                out.append(
                    pytest.param(case, form, id=case_id, marks=pytest.mark.skip(TELEGRAM_ONLY))
                )
                continue
            typed = build(text) if build else ("mention", text)
            if isinstance(typed, str):
                out.append(pytest.param(case, form, id=case_id, marks=pytest.mark.skip(typed)))
            else:
                out.append(pytest.param(case, form, id=case_id))
    return out


@pytest.mark.parametrize(("case", "form"), params())
async def test_parity_case_through_slack(gateway_server, monkeypatch, case, form):
    text = case["text"]
    async with (
        fake_slack() as fake,
        slack_gateway(
            gateway_server,
            fake,
            runtime(),
            interactive_only=HEADER["interactive_only"],
            slack_owners=["U1"],  # an owner's /help lists /new in a channel
        ) as h,
    ):
        seen = watch(monkeypatch, h.server.gateway, "slack")
        web = await webhook(h.slack.session, h.server.url, text)

        if form == "mention":
            await h.slack.event(mention(escape(text), channel="C1", ts="1.1"))
        else:
            command, argument = umbrella(text) if form == "umbrella" else per_command(text)  # type: ignore[misc]
            await h.slack.command(
                command, argument, channel="C1", response_url=fake.response_url("r")
            )
        await h.channel.drain(WAIT)

    same_as_webhook(seen, web, case)
    # What the user sees: the same text, rendered for Slack.
    expected = web["reply"]["text"]
    rejected = web["reply"]["category"] is not None
    if rejected and form != "mention":
        assert fake.responses_to("r") == [
            {"response_type": "ephemeral", "text": to_mrkdwn(expected)}
        ]
        assert fake.messages() == []
    else:
        [message] = fake.messages("C1")
        assert shown(message, expected)
        assert message.thread_ts == ("1.1" if form == "mention" else None)
