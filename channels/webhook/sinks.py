"""Where a ``POST /v1/messages`` turn's reply goes: the JSON answer, or server-sent events."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from contract import Classification, ComposerInputMessage
from gateway.api import Outcome, ReplySink, RuntimeEvent

from .answer import accepted_data, answer_body, big_answer_body, event_frame, write
from .events import sse_event
from .idempotency import Idempotency, Keys
from .wire import outcome_body

# A server-sent event stream's headers.
EVENT_STREAM = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


class AnswerSink(ReplySink):
    """Keeps the answer body, and stores it under the request's Idempotency-Key before the
    journal lets go of the input: a retry after a crash finds it.
    """

    def __init__(self, keys: Keys, conversation: str, idempotency: Idempotency | None) -> None:
        self.keys = keys
        self.conversation = conversation
        self.idempotency = idempotency
        self.body: dict[str, Any] | None = None

    async def completed(self, outcome: Outcome) -> None:
        conversation = self.conversation
        self.body = answer_body(conversation, outcome) or await big_answer_body(
            conversation, outcome
        )
        if self.idempotency is not None:
            await self.keys.store(self.idempotency, self.body)


class EventStreamSink(AnswerSink):
    """Server-sent events: ``accepted``, ``delta``..., tool/permission/status, then ``reply``."""

    def __init__(
        self,
        keys: Keys,
        response: web.StreamResponse,
        conversation: str,
        idempotency: Idempotency | None = None,
        reasoning: bool = True,
    ) -> None:
        super().__init__(keys, conversation, idempotency)
        self.response = response
        self.reasoning = reasoning
        self.sent_accepted = False
        self.gone = False

    async def send(self, event: str, data: dict[str, Any]) -> None:
        if self.gone:
            return
        frame = await event_frame(event, data)
        try:
            await write(self.response, frame)
        except ConnectionResetError:
            # The client left; the turn goes on (its reply is still replayable by key).
            self.gone = True

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        self.sent_accepted = True
        await self.send(
            "accepted", await accepted_data(self.conversation, classification, forwarded)
        )

    async def delta(self, text: str) -> None:
        await self.send("delta", {"text": text})

    async def event(self, event: RuntimeEvent) -> None:
        sent = sse_event(event, self.reasoning)
        if sent is not None:
            await self.send(*sent)

    async def finish(self, outcome: Outcome) -> None:
        """The ``reply`` event (after ``accepted`` if the turn sent none), and the end."""
        body = self.body or outcome_body(self.conversation, outcome)
        if not self.sent_accepted:
            await self.accepted(outcome.classification, outcome.forwarded)
        await self.send("reply", body)
        if not self.gone:
            await self.response.write_eof()
