"""An input run so that its user hears once how it ended, whatever happens on the way: the
reply, the attachment refusal, a bug in the pipeline, or the channel stopping mid-turn. For
channels that run inputs in tasks of their own (Slack, Discord), where no platform request is
left to answer a failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from .attachments import AttachmentError
from .inbound import InboundMessage, ReplySink

if TYPE_CHECKING:
    from .api import GatewayAPI
    from .state import Entry

STOPPED = "the gateway stopped before the reply was finished"


class AnsweringSink(ReplySink):
    """A sink that knows whether its final reply reached the user."""

    finished: bool = False


async def handle_once(
    gateway: GatewayAPI,
    message: Awaitable[InboundMessage],
    sink: AnsweringSink,
    entry: Entry,
    log: logging.Logger,
) -> None:
    """``gateway.handle`` of the input ``message`` makes, with one reply whatever fails; its
    journal entry is finished once the user was told (else the next start runs it again).
    """
    try:
        await gateway.handle(await message, sink, entry)
    except AttachmentError as exc:  # one reply; nothing goes to the runtime
        await sink.final(gateway.failure_reply("invalid", None, str(exc)))
    except Exception as exc:  # a bug in the pipeline still reaches the user, once
        log.exception("handling an input failed")
        if not sink.finished:
            error = str(exc) or type(exc).__name__
            await sink.final(gateway.failure_reply("generic", None, error))
    except asyncio.CancelledError:  # still running when the channel stopped
        if not sink.finished:
            await sink.final(gateway.failure_reply("generic", None, STOPPED))
        raise
    finally:
        await sink.aclose()
        if sink.finished:
            await gateway.done(entry)
