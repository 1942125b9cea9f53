"""What a channel hands the core, and what the core hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contract import Category, ComposerInputMessage

from .frozen import quick_init

if TYPE_CHECKING:
    from contract import Classification

    from .events import RuntimeEvent, UsageReported


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with a message (compositor ``file-attachment``): bytes or a reference."""

    name: str
    media_type: str = "application/octet-stream"
    data: bytes | None = None
    url: str | None = None


@quick_init
@dataclass(frozen=True, slots=True)
class InboundMessage:
    """A platform message after channel normalization (markup decoded, own mention removed).

    ``user`` is the sender's immutable platform id. ``direct``: a one-to-one chat with the bot;
    else ``groups`` are the ids of the place it was written in, as the access policy lists
    them (Telegram's chat; Slack's channel and team; Discord's channel and guild).
    """

    channel: str
    conversation: str
    user: str
    text: str
    message_id: str | None = None
    bot_username: str | None = None
    attachments: tuple[Attachment, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    direct: bool = False
    groups: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.channel}:{self.conversation}"


@quick_init
@dataclass(frozen=True, slots=True)
class Reply:
    """The one final answer to an input. ``text`` is Markdown; ``category`` None on success."""

    text: str
    category: Category | None = None
    stop_reason: str | None = None
    slash: bool = False  # the input was a slash command (channels prefix plain failures)
    usage: UsageReported | None = None  # what the turn cost, when the runtime said


@quick_init
@dataclass(frozen=True, slots=True)
class Outcome:
    classification: Classification
    forwarded: ComposerInputMessage | None
    reply: Reply | None  # None: dropped silently (addressed to another bot)


class ReplySink:
    """A channel's renderer for one input. The core calls ``final`` exactly once per input it
    does not drop; the other hooks stream what happens before it. A hook the sink's class
    does not override is not called at all (a turn for a sink without ``delta`` and
    ``event`` may then run without a pass of the event loop).
    """

    # Whether the final reply reached the user, for a sink that can tell (False until then):
    # an input stopped on its way is told so, and finished in the journal, only by such a
    # sink. None: it cannot tell; the next start runs such an input again, and answers then.
    finished: bool | None = None

    async def accepted(
        self, classification: Classification, forwarded: ComposerInputMessage | None
    ) -> None:
        """The input passed the contract and goes to the runtime (possibly queued)."""

    async def delta(self, text: str) -> None:
        """A chunk of the reply's Markdown text."""

    async def queued(self, ahead: int) -> None:
        """The input waits for the running turn (and ``ahead - 1`` queued inputs) to finish."""

    async def event(self, event: RuntimeEvent) -> None:
        """Tool, plan, reasoning, usage, permission, status and file events of the turn."""

    async def final(self, reply: Reply) -> None:
        """The final reply (full text, or the failure text)."""

    async def completed(self, outcome: Outcome) -> None:
        """After ``final``: the whole outcome, for channels that keep it (Idempotency-Key)."""

    async def aclose(self) -> None:
        """Stop whatever the sink still runs (typing, previews); called once it is done with."""
