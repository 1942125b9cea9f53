"""One input's replies rendered in Slack: streamed while the runtime writes, then the final
reply chunked under Slack's limits; rejections of slash commands only for the one who typed.
"""

from __future__ import annotations

import dataclasses

from channels.activity import with_usage
from channels.text import chunks
from contract import Classification, ComposerInputMessage
from gateway.api import PermissionRequired, Reply, ReplySink, RuntimeEvent

from .activity import ActivityPost
from .messages import Messages
from .mrkdwn import TEXT_LIMIT, to_mrkdwn
from .outbox import Outbox
from .permissions import permission_blocks, permission_text, permission_title
from .stream import ReplyStream
from .target import Target
from .web import respond

WARNING = ":warning: "


def render(reply: Reply, limit: int = TEXT_LIMIT) -> list[str]:
    """The reply as mrkdwn messages; a plain (non-slash) failure gets the warning prefix."""
    return chunks(mrkdwn(reply), limit)


def mrkdwn(reply: Reply) -> str:
    """The reply as mrkdwn, whole; a plain (non-slash) failure gets the warning prefix."""
    text = to_mrkdwn(reply.text)
    return WARNING + text if reply.category is not None and not reply.slash else text


class SlackSink(ReplySink):
    def __init__(self, outbox: Outbox, target: Target, show_reasoning: bool = True) -> None:
        self.outbox = outbox
        self.target = target
        self.messages = Messages(outbox, target)
        self.stream = ReplyStream(self.messages)
        self.show_reasoning = show_reasoning
        self.activity: ActivityPost | None = None  # made with the first agent event
        self._queued = False  # the user's message shows the "queued" reaction
        self.finished = False
        self._settled = False  # the stream settled for the final: closing it does nothing
        self._accepted = False

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self._accepted = True

    async def queued(self, ahead: int) -> None:
        # Only messages queue (a slash command on a busy session is refused): mark the message.
        if self.target.message_ts is not None:
            self._queued = await self.messages.react("reactions_add")

    async def delta(self, text: str) -> None:
        if self.activity is not None:
            self.activity.progress()
        self.stream.add(text)

    async def event(self, event: RuntimeEvent) -> None:
        if isinstance(event, PermissionRequired):
            blocks = permission_blocks(event, self.target)
            title = f":lock: {permission_title(event)}"
            if await self.messages.post(title, blocks=blocks) is None:
                # Without a message the user would not know the turn waits for them.
                await self.messages.post(permission_text(event))
        else:
            if self.activity is None:
                self.activity = ActivityPost(self.messages, self.show_reasoning)
            self.activity.update(event)

    async def final(self, reply: Reply) -> None:
        self.finished = True
        await self.stream.settle()
        self._settled = True
        if self.activity is not None:
            await self.activity.finish()
        if self._queued:
            await self.messages.react("reactions_remove")
        if reply.usage is not None:
            reply = dataclasses.replace(reply, text=with_usage(reply.text, reply.usage))
        if not self._accepted and reply.category is not None and self.target.response_url:
            # A rejected slash command: only its author sees it, as Slack does for its own.
            for text in render(reply)[:5]:
                await respond(
                    self.outbox.session,
                    self.target.response_url,
                    {"response_type": "ephemeral", "text": text},
                )
            return
        # Only a native stream is closed by ``finish``: without one, no call into it.
        if self.stream.stream_ts is not None and await self.stream.finish(reply):
            return
        edit = self.stream.message_ts if reply.category is None else None
        await self.messages.reply(mrkdwn(reply), edit, self.stream.rendered)

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """The input is over (even if it ended without a final reply): stop streaming."""
        if not self._settled:
            self.stream.close()
        if self.activity is not None:
            self.activity.cancel()
