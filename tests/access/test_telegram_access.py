"""The access policy on Telegram, through aiogram against the fake Bot API, from the policy's
real defaults: a stranger's direct message gets a pairing code and reaches nothing; the
operator approves it with ``slashgate access`` while the gateway runs; revoked, it is refused
again. Groups must be listed; owners alone switch modes; a burst gets ``rate_limited`` once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path

from gateway.access import Book
from tests.access.cli import access, stored
from tests.access.recording import Recording, pairing_code
from tests.conftest import ACCESS_DEFAULTS, make_settings
from tests.telegram.fake_bot_api import FakeBotAPI
from tests.telegram.helpers import GROUP, PRIVATE, USER, Served, Start, message_update
from tests.telegram.test_attachments import file_update

OTHER = 4242  # another user, in the group
OWNER = 4343


async def scrape(served: Served) -> str:
    async with served.http.get(served.server.url + "/metrics") as resp:
        return await resp.text()


async def test_a_stranger_is_paired_approved_while_running_and_revoked(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    runtime = Recording()
    settings, cli = stored(tmp_path)
    async with telegram(runtime, **settings) as served:
        await served.deliver(message_update(PRIVATE, "/echo hi"))
        [reply] = fake.messages(PRIVATE)
        code = pairing_code(reply.text)
        assert "slashgate access approve telegram" in reply.text
        await served.deliver(message_update(PRIVATE, "/echo again"))  # no second code
        assert len(fake.messages(PRIVATE)) == 1
        assert runtime.inputs == []

        pending = await access(cli, "pending")
        assert f"telegram {code} from {USER}" in pending.out
        approved = await access(cli, "approve", "telegram", code)
        assert approved.status == 0, approved.err
        assert "first owner" in approved.out
        again = await access(cli, "approve", "telegram", code.lower())
        assert (again.status, "approved already" in again.out) == (0, True)

        await asyncio.sleep(served.server.gateway.access.books.max_age)  # its promise: 1 s
        await served.deliver(message_update(PRIVATE, "/echo hi"))
        assert runtime.texts == ["/echo hi"]
        assert fake.messages(PRIVATE)[-1].text == "ran: /echo hi"

        revoked = await access(cli, "revoke", "telegram", str(USER))
        assert revoked.status == 0, revoked.err
        await asyncio.sleep(served.server.gateway.access.books.max_age)
        sent = len(fake.messages(PRIVATE))
        await served.deliver(message_update(PRIVATE, "/echo after"))
        assert runtime.texts == ["/echo hi"]
        [new_code] = [m.text for m in fake.messages(PRIVATE)[sent:]]
        assert pairing_code(new_code) != code
        listing = await access(cli, "list")
        assert "owners: none" in listing.out


def expire(served: Served, code: str) -> Awaitable[None]:
    """Let an hour pass for ``code``: its request expired a second ago."""

    def backdate(book: Book) -> None:
        book.requests[code]["expires"] = time.time() - 1

    return served.server.gateway.access.books.change("telegram", backdate)


async def test_a_wrong_code_says_nothing_of_the_codes_that_exist(
    telegram: Start, fake: FakeBotAPI, tmp_path: Path
) -> None:
    settings, cli = stored(tmp_path)
    async with telegram(Recording(), **settings) as served:
        await served.deliver(message_update(PRIVATE, "hello"))
        code = pairing_code(fake.messages(PRIVATE)[0].text)
        wrong = "ABCDEFGH" if code != "ABCDEFGH" else "HGFEDCBA"
        said = await access(cli, "approve", "telegram", wrong)
        await expire(served, code)
        expired = await access(cli, "approve", "telegram", code)
    assert (said.status, said.out.strip()) == (1, "telegram: no pairing request has that code")
    assert expired.status == 1
    assert expired.out.strip() == (
        "telegram: that code expired; the sender gets a new one with their next message"
    )
    unknown = await access(cli, "approve", "telegrm", code)
    assert unknown.status == 2
    assert "the chat channels are telegram, slack, discord" in unknown.err
    bad_id = await access(cli, "allow", "telegram", "@ada")
    assert (bad_id.status, "is not a Telegram user or chat id" in bad_id.err) == (2, True)


async def test_an_owner_pairs_from_the_chat(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Recording()
    settings = {**ACCESS_DEFAULTS, "telegram_owners": [str(OWNER)]}
    async with telegram(runtime, **settings) as served:

        async def said(chat: int, text: str, user: int) -> str:
            await served.deliver(message_update(chat, text, user_id=user))
            return fake.messages(chat)[-1].text

        old = pairing_code(await said(PRIVATE, "hello", USER))
        await expire(served, old)
        assert await said(OWNER, f"/pair {old}", OWNER) == (
            "That pairing code expired: ask for a new one by sending the bot a message."
        )
        code = pairing_code(await said(PRIVATE, "hello again", USER))  # a new one
        assert code != old
        wrong = "ABCDEFGH" if code != "ABCDEFGH" else "HGFEDCBA"
        assert await said(OWNER, f"/pair {wrong}", OWNER) == "No pairing request has that code."
        stranger = await said(OTHER, f"/pair {code}", OTHER)  # a stranger's: their own code
        assert pairing_code(stranger) != code
        assert await said(OWNER, f"/pair {code.lower()}", OWNER) == (
            f"Approved {USER}: they may talk to the bot now."
        )
        assert await said(OWNER, f"/pair {code}", OWNER) == f"{USER} was approved already."
        assert await said(USER, "/pair ABCDEFGH", USER) == (
            "Slash command /pair is not allowed for you here."
        )
        assert await said(PRIVATE, "/echo hi", USER) == "ran: /echo hi"
    assert runtime.texts == ["/echo hi"]


async def test_at_most_three_strangers_wait_and_the_rest_get_no_reply(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Recording()
    async with telegram(runtime, **ACCESS_DEFAULTS) as served:
        for user in range(5001, 5006):
            await served.deliver(message_update(user, "hi", user_id=user))
        answered = [u for u in range(5001, 5006) if fake.messages(u)]
        metrics = await scrape(served)
    assert answered == [5001, 5002, 5003]
    assert runtime.inputs == []
    assert 'slashgate_access_denied_total{channel="telegram",reason="pairing_full"} 2.0' in metrics


async def test_groups_must_be_listed_and_members_may_be_too(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Recording()
    async with telegram(runtime, **ACCESS_DEFAULTS) as served:
        await served.deliver(message_update(GROUP, "/echo unlisted"))
        assert fake.messages(GROUP) == []
        metrics = await scrape(served)
    assert runtime.inputs == []
    assert 'reason="group_not_allowed"} 1.0' in metrics

    listed = {**ACCESS_DEFAULTS, "telegram_allow_groups": [str(GROUP)]}
    async with telegram(runtime, **listed) as served:
        await served.deliver(message_update(GROUP, "/echo listed", user_id=OTHER))
    assert runtime.texts == ["/echo listed"]

    members = {**listed, "telegram_group_members": "allowlist", "telegram_allow_users": [str(USER)]}
    async with telegram(runtime, **members) as served:
        await served.deliver(message_update(GROUP, "/echo stranger", user_id=OTHER))
        await served.deliver(message_update(GROUP, "/echo member", user_id=USER))
    assert runtime.texts == ["/echo listed", "/echo member"]


async def test_only_owners_switch_modes_or_start_anew_in_a_group(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Recording()
    settings = {
        **ACCESS_DEFAULTS,
        "telegram_allow_groups": [str(GROUP)],
        "telegram_owners": [str(USER)],
        "telegram_owner_commands": ["skill:*"],
    }
    async with telegram(runtime, **settings) as served:
        for text in ("/mode code", "/new", "/skill:deploy", "/help"):
            await served.deliver(message_update(GROUP, text, user_id=OTHER))
        refused = [m.text for m in fake.messages(GROUP)]
        await served.deliver(message_update(GROUP, "/mode code", user_id=USER))
    assert refused[:3] == [
        "Slash command /mode is not allowed for you here.",
        "Slash command /new is not allowed for you here.",
        "Slash command /skill:deploy is not allowed for you here.",
    ]
    assert "/mode" not in refused[3] and "skill:deploy" not in refused[3]
    assert "/echo" in refused[3] or "echo" in refused[3]
    assert runtime.modes_set == ["code"]
    assert runtime.inputs == []


async def test_a_burst_over_the_limit_is_told_once(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Recording()
    settings = {**ACCESS_DEFAULTS, "telegram_allow_users": [str(USER)]}
    async with telegram(runtime, **settings) as served:
        for n in range(8):
            await served.deliver(message_update(PRIVATE, f"/echo {n}"))
    texts = [m.text for m in fake.messages(PRIVATE)]
    burst = make_settings().sender_burst
    assert runtime.texts == [f"/echo {n}" for n in range(burst)]
    [told] = [t for t in texts if "too fast" in t]
    assert told.startswith("Slash command /echo could not run: you are sending too fast.")
    assert len(texts) == burst + 1


async def test_a_strangers_file_is_never_downloaded(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Recording()
    async with telegram(runtime, **ACCESS_DEFAULTS) as served:
        sent = fake.add_file(b"x" * 1000, "x/document", file_name="big.bin")
        await served.deliver(file_update(PRIVATE, "look", document=sent))
        [reply] = fake.messages(PRIVATE)
    pairing_code(reply.text)
    assert fake.downloads == [] and fake.calls_to("getFile") == []
    assert runtime.inputs == []
