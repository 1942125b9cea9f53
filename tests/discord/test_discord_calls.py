"""What a one-line reply costs in Discord REST calls: the interaction's deferred response is
the acknowledgement Discord requires (it goes back in the HTTP answer), then one edit of it,
whether the reply was ready at once or showed as a preview first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from contract import Command
from gateway.events import MessageDelta, MessageEnd, RuntimeEvent
from gateway.runtimes import Turn
from tests.slack.slack_harness import ScriptedRuntime, ScriptedSession

from .fake import FakeDiscord, fake_discord
from .harness import discord_gateway
from .interactions import command

GO = (Command(name="go"), Command(name="now"))


def script(fake: FakeDiscord) -> object:
    async def run(turn: Turn, session: ScriptedSession) -> AsyncIterator[RuntimeEvent]:
        yield MessageDelta("done")
        if turn.message.payload.source == "/go":  # the turn ends once its preview shows
            await fake.wait(lambda: bool(fake.writes("PATCH", "@original")))
        yield MessageEnd()

    return run


async def test_a_one_line_reply_is_one_call_besides_the_acknowledgement(gateway_server):
    async with fake_discord() as fake:
        runtime = ScriptedRuntime(script(fake), GO)  # type: ignore[arg-type]
        async with discord_gateway(gateway_server, fake, runtime) as h:
            for name in ("now", "go"):
                payload = command(name)
                status, body = await h.interact(payload)
                assert status == 200 and body["type"] == 5  # deferred: the acknowledgement
                [reply] = await h.replies(payload["token"])
                assert reply.content == "done"
                calls = [c for c in fake.calls if payload["token"] in c.path]
                assert [(c.method, c.path.rpartition("/")[2]) for c in calls] == [
                    ("PATCH", "@original")
                ], name
