"""The access policy on Slack, through slack-bolt against the fake Slack, from its real
defaults: a stranger's direct message gets a pairing code and nothing runs until ``slashgate
access approve``, and again once revoked; an unlisted channel is ignored; in a listed one a
non-owner's ``/agent mode`` is refused ephemerally.
"""

from __future__ import annotations

from pathlib import Path

from tests.access.cli import access, stored
from tests.access.recording import Recording, pairing_code
from tests.conftest import ACCESS_DEFAULTS
from tests.slack.slack_fake import WAIT, direct_message, fake_slack, mention
from tests.slack.slack_harness import slack_gateway


async def test_a_stranger_gets_a_code_runs_once_approved_and_not_once_revoked(
    gateway_server, tmp_path: Path
) -> None:
    runtime = Recording()
    settings, cli = stored(tmp_path)
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime, **settings) as h:
        books = h.server.gateway.access.books
        books.max_age = 0  # each input reads the store (the 1 s promise: test_records.py)
        await h.slack.event(direct_message("/echo hi", ts="1.1", user="U7"))
        await h.channel.drain(WAIT)
        [reply] = fake.messages("D1")
        code = pairing_code(reply.text)
        assert runtime.inputs == []
        said = await access(cli, "approve", "slack", code)  # while the gateway runs
        assert said.out.strip() == "slack: approved U7, the channel's first owner", said.err
        await h.slack.event(direct_message("/echo hi", ts="1.2", user="U7"))
        await h.channel.drain(WAIT)
        assert runtime.texts == ["/echo hi"]
        await books.change("slack", lambda book: book.revoke("U7"))  # as access revoke does
        await h.slack.event(direct_message("/echo again", ts="1.3", user="U7"))
        await h.channel.drain(WAIT)
        assert pairing_code(fake.messages("D1")[-1].text) != code  # a stranger again
    assert runtime.texts == ["/echo hi"]


async def test_an_unlisted_channel_is_ignored_and_owners_alone_switch_modes(
    gateway_server,
) -> None:
    runtime = Recording()
    async with (
        fake_slack() as fake,
        slack_gateway(gateway_server, fake, runtime, **ACCESS_DEFAULTS) as h,
    ):
        await h.slack.event(mention("/echo hi", channel="C9", ts="2.1"))
        await h.slack.command(
            "/agent", "echo hi", channel="C9", response_url=fake.response_url("a")
        )
        await h.channel.drain(WAIT)
        assert fake.messages("C9") == [] and fake.responses_to("a") == []
    assert runtime.inputs == []

    listed = {**ACCESS_DEFAULTS, "slack_allow_groups": ["C1"], "slack_owners": ["U1"]}
    async with fake_slack() as fake, slack_gateway(gateway_server, fake, runtime, **listed) as h:
        await h.slack.command("/agent", "mode code", user="U2", response_url=fake.response_url("m"))
        await h.slack.command("/agent", "echo hi", user="U2", response_url=fake.response_url("e"))
        await h.channel.drain(WAIT)
        assert fake.responses_to("m") == [
            {
                "response_type": "ephemeral",
                "text": "Slash command /mode is not allowed for you here.",
            }
        ]
    assert runtime.texts == ["/echo hi"]
    assert runtime.modes_set == []
