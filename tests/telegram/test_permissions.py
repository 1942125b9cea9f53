"""Permission requests as inline keyboards; the choice goes back to the runtime."""

from __future__ import annotations

import asyncio

from channels.telegram.permissions import NOT_YOURS, STALE
from contract import Command
from gateway.events import MessageDelta, MessageEnd, PermissionOption, PermissionRequired

from .fake_bot_api import WAIT, FakeBotAPI
from .helpers import GROUP, USER, Scripted, Start, callback_update, message_update

REQUEST = PermissionRequired(
    "req-1",
    "Run `rm -rf build/`?",
    (PermissionOption("allow", "Allow once"), PermissionOption("deny", "Reject", "reject_once")),
)


def answers(fake: FakeBotAPI) -> list[str | None]:
    return [c.params.get("text") for c in fake.calls_to("answerCallbackQuery")]


async def test_the_choice_goes_back_to_the_runtime(telegram: Start, fake: FakeBotAPI) -> None:
    runtime = Scripted(Command(name="clean", description="Clean"))
    async with telegram(runtime) as served:
        await served.post(message_update(GROUP, "/clean"))
        turn = await runtime.next_turn()
        turn.emit(REQUEST)
        await fake.wait(lambda: len(fake.messages(GROUP)) == 1)
        [prompt] = fake.messages(GROUP)
        assert prompt.text == "🔐 Permission needed\nRun `rm -rf build/`?"
        buttons = [row[0] for row in prompt.reply_markup["inline_keyboard"]]
        assert [b["text"] for b in buttons] == ["Allow once", "Reject"]
        assert all(len(b["callback_data"].encode()) <= 64 for b in buttons)

        async def press(data: str, user: int = USER) -> str | None:
            """Press a button (the turn is still running) and wait for the bot's answer."""
            count = len(answers(fake))
            assert (await served.post(callback_update(GROUP, prompt.message_id, data, user)))[
                0
            ] == 200
            await fake.wait(lambda: len(answers(fake)) > count)
            return answers(fake)[-1]

        # Someone else in the group cannot answer for the user.
        assert await press(buttons[0]["callback_data"], USER + 1) == NOT_YOURS
        assert "req-1" not in turn.answers

        assert await press(buttons[0]["callback_data"]) == "Allow once"
        assert await asyncio.wait_for(turn.answers["req-1"], WAIT) == "allow"
        await fake.wait(lambda: prompt.text.endswith("\n\n→ Allow once"))
        assert not prompt.reply_markup

        # The same button again (or any stale one) gets a polite answer and changes nothing.
        assert await press(buttons[1]["callback_data"]) == STALE
        assert await press("perm:unknown:0") == STALE

        turn.emit(MessageDelta("cleaned"), MessageEnd())
        await fake.wait(lambda: fake.texts(GROUP)[-1] == "cleaned")


async def test_an_unknown_button_is_answered_so_the_client_stops_waiting(
    telegram: Start, fake: FakeBotAPI
) -> None:
    async with telegram() as served:
        await served.deliver(callback_update(GROUP, 99, "something-else"))
        assert len(fake.calls_to("answerCallbackQuery")) == 1
