"""Through slack-bolt against the fake Slack: a conversation whose reply shows is free for the
next command, even while other channels spend the workspace's chat.update budget; what is left
of the reply goes on behind it (issue 33: "busy" only from a turn still running).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from channels.slack.pacing import SlackPacing
from contract import Command
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent, UsageReported
from gateway.runtimes import Turn
from tests.probe import until
from tests.slack.slack_fake import WAIT, FakeSlack, fake_slack
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession, slack_gateway

COMMANDS = (
    Command(name="chat", description="Stream"),
    Command(name="hi", description="Hi"),
    Command(name="ask", description="Hi, with its usage"),
)
CHATTY = ("C2", "C3")  # streaming: more chat.update calls than the budget has
USAGE = UsageReported(input_tokens=10, output_tokens=2)


def replies(fake: FakeSlack, channel: str) -> list[str]:
    """What the bot's messages in ``channel`` say first (after the line that says who ran
    what).
    """
    return [m.text.split("\n")[1] for m in fake.messages(channel)]


def script(fake: FakeSlack, stop: asyncio.Event) -> Callable[..., AsyncIterator[RuntimeEvent]]:
    async def run(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        if turn.message.payload.source.startswith("/chat"):
            while not stop.is_set():
                yield MessageDelta("more ")
                await asyncio.sleep(0.02)  # the agent's own pace
        else:
            shown = replies(fake, "C1").count("done")
            yield MessageDelta("done")
            # The turn ends once its text shows: what is left is a call that changes nothing,
            # or (/ask) its usage line: one more chat.update under the workspace's budget.
            await fake.wait_for(lambda: replies(fake, "C1").count("done") > shown)
            if turn.message.payload.source.startswith("/ask"):
                yield USAGE
        yield MessageEnd()

    return run


async def test_the_next_command_after_a_visible_reply_runs_while_the_budget_is_spent(
    gateway_server,
):
    stop = asyncio.Event()
    async with fake_slack() as fake:
        runtime = ScriptedRuntime(script(fake, stop), COMMANDS)
        # chat.update at 300 a minute for the workspace; each streaming channel wants 20 a
        # second (its preview every 50 ms).
        async with slack_gateway(gateway_server, fake, runtime, slack_rate_update=300.0) as h:
            h.channel.outbox.update_interval = 0.05
            try:
                for channel in CHATTY:
                    await h.slack.command("/agent", "chat", channel=channel,
                                          response_url=fake.response_url(channel))  # fmt: skip
                await fake.wait_for(lambda: len(fake.of("chat.update")) >= 2, WAIT)
                for i in range(2):
                    await h.slack.command("/agent", "ask", channel="C1",
                                          response_url=fake.response_url(f"C1-{i}"))  # fmt: skip
                    # The next command as soon as this reply shows (or "busy" does).
                    await fake.wait_for(
                        lambda i=i: replies(fake, "C1").count("done") > i or fake.responses, WAIT
                    )
                busy = [body["text"] for _, body in fake.responses]
            finally:
                stop.set()
            await h.channel.drain(WAIT)
    assert busy == [], "no command found the conversation busy"
    assert replies(fake, "C1") == ["done", "done"]
    assert all(m.text.endswith("_12 tokens (10 in, 2 out)_") for m in fake.messages("C1"))


async def test_a_one_line_reply_is_one_post(gateway_server):
    """Ready at once, or shown as a preview before the turn ended: one chat.postMessage."""
    stop = asyncio.Event()
    async with fake_slack() as fake:
        runtime = ScriptedRuntime(script(fake, stop), COMMANDS)
        async with slack_gateway(gateway_server, fake, runtime) as h:
            await h.slack.command("/agent", "hi", channel="C1",
                                  response_url=fake.response_url("a"))  # fmt: skip
            await h.channel.drain(WAIT)
    assert replies(fake, "C1") == ["done"]
    assert [c.method for c in fake.calls if c.method.startswith("chat.")] == ["chat.postMessage"]


async def test_a_reply_that_ends_while_its_preview_waits_for_its_turn_is_one_post(gateway_server):
    """The channel's burst is spent: the preview waits for its turn under the limit, the turn
    ends meanwhile, and the reply goes once, as the final post (no preview, no update).
    """
    async with fake_slack() as fake:
        holder: list[SlackPacing] = []

        async def run(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
            yield MessageDelta("done")
            if turn.message.payload.source == "/chat":  # ends once its preview waits
                await until(lambda: "C1" in holder[0].posts._busy)
            yield MessageEnd()

        runtime = ScriptedRuntime(run, COMMANDS)
        async with slack_gateway(gateway_server, fake, runtime, slack_rate_channel=2.0) as h:
            holder.append(h.channel.pacing)
            for i, name in enumerate(("hi", "hi", "chat")):  # two replies spend the burst
                await h.slack.command("/agent", name, channel="C1",
                                      response_url=fake.response_url(f"r{i}"))  # fmt: skip
                await fake.wait_for(lambda i=i: len(fake.of("chat.postMessage")) > i, WAIT)
            await h.channel.drain(WAIT)
    assert [c.method for c in fake.calls if c.method.startswith("chat.")] == [
        "chat.postMessage"
    ] * 3
