"""Replies as the user sees them: catalog texts, failures, Markdown, long text, streaming,
plain-text fallback, flood control.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from channels.telegram import delivery, sink
from channels.telegram.sink import TYPING_EVERY
from contract import Command
from gateway.backoff import Backoff
from gateway.events import ErrorEvent, MessageDelta, MessageEnd

from .fake_bot_api import NOT_MODIFIED, WAIT, FakeBotAPI
from .helpers import GROUP, PRIVATE, Scripted, ScriptedTurn, Served, Start, message_update

GO = Command(name="go", description="Go")
INTERVAL = 0.2
FAST = Backoff(base=0.01)  # retries without the waits


async def test_rejections_use_the_catalog(telegram: Start, fake: FakeBotAPI) -> None:
    async with telegram() as served:
        for text in ("/nope", "/settings", "/", "/foo!"):
            await served.deliver(message_update(PRIVATE, text))
        assert fake.texts(PRIVATE) == [
            "Unsupported slash command /nope. Send /help to list available commands.",
            "Unsupported slash command /settings. This command only runs in the interactive TUI.",
            "Invalid slash command. Enter a command name after /.",
            "Invalid slash command. Enter a command name after /.",
        ]


async def test_plain_text_failures_get_the_warning_sign_and_commands_do_not(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        for text in ("please do it", "/go now"):
            await served.post(message_update(PRIVATE, text))
            turn = await runtime.next_turn()
            turn.emit(ErrorEvent("generic", "boom"))
            await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(PRIVATE) == [
            "⚠️ The request failed: boom",
            "Slash command /go failed: boom",
        ]


async def test_markdown_is_sent_as_telegram_html(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("**Done:** run `make test` & <see>"), MessageEnd())
        await fake.wait(lambda: len(fake.messages(PRIVATE)) == 1)
        [sent] = fake.messages(PRIVATE)
        assert sent.parse_mode == "HTML"
        assert sent.text == "Done: run make test & <see>"
        assert [e["type"] for e in sent.entities] == ["bold", "code"]


async def test_a_long_reply_arrives_in_order_in_several_messages(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    paragraphs = [f"Paragraph {i}. " + "lorem ipsum " * 40 for i in range(40)]
    async with telegram(runtime) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("\n\n".join(paragraphs)), MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        texts = fake.texts(PRIVATE)
        assert len(texts) > 4 and all(len(t) <= 4096 for t in texts)
        assert "\n\n".join(texts) == "\n\n".join(p.strip() for p in paragraphs)


async def test_refused_entities_fall_back_to_plain_text(telegram: Start, fake: FakeBotAPI) -> None:
    fake.inject(
        "sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag",
        when=lambda params: params.get("parse_mode") == "HTML",
    )  # fmt: skip
    async with telegram() as served:
        await served.deliver(message_update(PRIVATE, "/echo **bold** move"))
        [sent] = fake.messages(PRIVATE)
        assert (sent.text, sent.parse_mode, sent.entities) == ("bold move", None, [])


async def test_flood_control_is_waited_out_not_dropped(telegram: Start, fake: FakeBotAPI) -> None:
    fake.flood("sendMessage", retry_after=1)
    async with telegram() as served:
        await served.deliver(message_update(PRIVATE, "/echo patience"))
        assert fake.texts(PRIVATE) == ["patience"]
        refused, accepted = fake.calls_to("sendMessage")
        assert accepted.at - refused.at >= 1.0
        assert fake.errors == [("sendMessage", "Too Many Requests: retry after 1")]


async def test_a_quick_reply_is_one_message_without_previews(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram(telegram_edit_interval=5.0) as served:
        await served.deliver(message_update(GROUP, "/echo quick"))
        await served.deliver(message_update(PRIVATE, "/echo quick"))
        assert fake.texts(GROUP) == ["quick"] and fake.texts(PRIVATE) == ["quick"]
        assert fake.calls_to("editMessageText") == [] and fake.drafts == []


async def test_group_streaming_edits_one_placeholder_at_a_paced_rate(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        await served.post(message_update(GROUP, "/go"))
        turn = await runtime.next_turn()
        started = asyncio.get_running_loop().time()
        turn.emit(MessageDelta("one"))
        await fake.wait(lambda: fake.texts(GROUP) == ["one"])
        placeholder = fake.calls_to("sendMessage")[0]
        assert placeholder.at - started >= INTERVAL * 0.9  # a quick reply would need no preview
        for word in (" two", " three", " four"):
            turn.emit(MessageDelta(word))
        await fake.wait(lambda: fake.texts(GROUP) == ["one two three four"])
        turn.emit(MessageEnd())  # the final text equals the last preview: no call for it
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(GROUP) == ["one two three four"]
        edits = fake.calls_to("editMessageText")
        moments = [placeholder.at] + [e.at for e in edits]
        assert all(b - a >= INTERVAL * 0.9 for a, b in itertools.pairwise(moments))
        assert ("editMessageText", NOT_MODIFIED) not in fake.errors
        assert edits[-1].params["text"] == "one two three four"
        assert len(fake.calls_to("sendMessage")) == 1


async def test_private_streaming_uses_drafts_then_sends_the_message(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        update = message_update(PRIVATE, "/go")
        await served.post(update)
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("thinking *hard*"))
        await fake.wait(lambda: len(fake.drafts) == 1)
        turn.emit(MessageDelta(" about it"))
        await fake.wait(lambda: len(fake.drafts) == 2)
        turn.emit(MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["thinking hard about it"])
        first, second = fake.drafts
        assert (
            first.params["draft_id"]
            == second.params["draft_id"]
            == str(update["message"]["message_id"])
        )
        assert first.params["text"] == "thinking <i>hard</i>"
        assert second.params["text"] == "thinking <i>hard</i> about it"
        assert fake.calls_to("editMessageText") == []


async def test_without_drafts_a_private_chat_gets_a_placeholder(
    telegram: Start, fake: FakeBotAPI
) -> None:
    fake.inject("sendMessageDraft", 404, "Not Found: method not found")
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("partial"))
        await fake.wait(lambda: fake.texts(PRIVATE) == ["partial"])
        turn.emit(MessageDelta(" and whole"), MessageEnd())
        await fake.wait(lambda: fake.texts(PRIVATE) == ["partial and whole"])
        assert served.channel.drafts is False
        assert len(fake.calls_to("sendMessageDraft")) == 1


async def test_typing_is_shown_while_the_agent_works(telegram: Start, fake: FakeBotAPI) -> None:
    assert TYPING_EVERY < 5  # Telegram clears the action after five seconds
    runtime = Scripted(GO)
    async with telegram(runtime) as served:
        await served.post(message_update(GROUP, "/go", thread_id=3))
        turn = await runtime.next_turn()
        await fake.wait(lambda: bool(fake.calls_to("sendChatAction")))
        [action] = fake.calls_to("sendChatAction")
        assert action.params == {
            "chat_id": str(GROUP),
            "action": "typing",
            "message_thread_id": "3",
        }
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(GROUP) == ["✅ /go executed."]


async def partial_in_group(served: Served, runtime: Scripted) -> ScriptedTurn:
    """/go in the group, and the first part of its reply."""
    await served.post(message_update(GROUP, "/go"))
    turn = await runtime.next_turn()
    turn.emit(MessageDelta("partial"))
    return turn


async def finish_whole(served: Served, turn: ScriptedTurn) -> None:
    """The rest of the reply, and its end; returns once the update is handled."""
    turn.emit(MessageDelta(" and whole"), MessageEnd())
    await asyncio.wait_for(served.channel.intake.drain(), WAIT)


async def test_a_failed_preview_does_not_cost_the_final_message(
    telegram: Start, fake: FakeBotAPI
) -> None:
    fake.inject("sendMessage", 400, "Bad Request: not enough rights to send text messages")
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        turn = await partial_in_group(served, runtime)
        await fake.wait(lambda: bool(fake.errors))  # the placeholder was refused
        await finish_whole(served, turn)
        assert fake.texts(GROUP) == ["partial and whole"]


async def test_a_deleted_placeholder_gets_the_final_text_as_a_new_message(
    telegram: Start, fake: FakeBotAPI
) -> None:
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        turn = await partial_in_group(served, runtime)
        await fake.wait(lambda: fake.texts(GROUP) == ["partial"])
        [placeholder] = fake.messages(GROUP)
        del fake.sent[(GROUP, placeholder.message_id)]  # someone deleted it
        await finish_whole(served, turn)
        assert fake.texts(GROUP) == ["partial and whole"]
        assert ("editMessageText", "Bad Request: message to edit not found") in fake.errors


async def test_the_final_text_outlasts_server_and_network_errors(
    telegram: Start, fake: FakeBotAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "RETRY", FAST)
    fake.inject("sendMessage", 502, "Bad Gateway", times=2)
    fake.redirect_loop("sendMessage")  # then a network error
    async with telegram() as served:
        await served.deliver(message_update(PRIVATE, "/echo arrives"))
        assert fake.texts(PRIVATE) == ["arrives"]
        assert fake.errors == [("sendMessage", "Bad Gateway")] * 2


async def test_the_final_edit_of_a_placeholder_is_retried(
    telegram: Start, fake: FakeBotAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "RETRY", FAST)
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=INTERVAL) as served:
        turn = await partial_in_group(served, runtime)
        await fake.wait(lambda: fake.texts(GROUP) == ["partial"])
        fake.inject("editMessageText", 500, "Internal Server Error")
        await finish_whole(served, turn)
        assert fake.texts(GROUP) == ["partial and whole"]  # the placeholder, edited
        assert ("editMessageText", "Internal Server Error") in fake.errors


@pytest.mark.parametrize(
    ("policy", "attempts"),
    [
        (Backoff(attempts=4, base=0.01), 4),  # the number of attempts is bounded
        (Backoff(base=0.2, within=0.05), 1),  # so is the time: the first wait ends past 0.05 s
    ],
    ids=["number", "time"],
)
async def test_retries_end_within_bounds(
    telegram: Start,
    fake: FakeBotAPI,
    monkeypatch: pytest.MonkeyPatch,
    policy: Backoff,
    attempts: int,
) -> None:
    monkeypatch.setattr(delivery, "RETRY", policy)
    fake.inject("sendMessage", 503, "Service Unavailable", times=100)
    async with telegram() as served:
        await served.deliver(message_update(PRIVATE, "/echo lost"))  # ends: it gives up
        assert len(fake.calls_to("sendMessage")) == attempts
        assert fake.texts(PRIVATE) == []


async def test_a_draft_is_sent_again_before_telegram_drops_it(
    telegram: Start, fake: FakeBotAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sink.DRAFT_EVERY < 30  # Telegram shows a draft for 30 seconds
    monkeypatch.setattr(sink, "DRAFT_EVERY", 0.1)
    runtime = Scripted(GO)
    async with telegram(runtime, telegram_edit_interval=0.05) as served:
        await served.post(message_update(PRIVATE, "/go"))
        turn = await runtime.next_turn()
        turn.emit(MessageDelta("still thinking"))
        await fake.wait(lambda: len(fake.drafts) >= 3)  # the agent is quiet; the draft stays
        turn.emit(MessageEnd())
        await asyncio.wait_for(served.channel.intake.drain(), WAIT)
        assert fake.texts(PRIVATE) == ["still thinking"]
        assert {draft.params["text"] for draft in fake.drafts} == {"still thinking"}
        moments = [draft.at for draft in fake.drafts]
        assert all(b - a >= 0.09 for a, b in itertools.pairwise(moments))
