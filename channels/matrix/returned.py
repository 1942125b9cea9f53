"""Files the agent returns, sent to the room after the reply's text: each uploaded to the
homeserver's media repository, then sent as ``m.image`` (an image) or ``m.file`` with its
name, type and size, answering the user's message as the text does (in its thread, else as a
reply to it). The attachment limits hold for them as for the files people send; a file over
them, or one the homeserver would not take, is named in one notice instead: a file is never
lost without a word.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from mautrix.crypto.attachments import encrypt_attachment
from mautrix.errors import MatrixError
from mautrix.types import ContentURI, EncryptedFile

from gateway.api import FileReturned
from gateway.attachments import size_text
from gateway.offload import off_loop
from gateway.settings import CoreSettings

from .outbox import NO_MENTIONS, Outbox, Target
from .render import render

log = logging.getLogger("slashgate.matrix")


def file_content(
    returned: FileReturned, url: str, sealed: EncryptedFile | None = None
) -> dict[str, Any]:
    """The message of an uploaded file: ``m.image`` for an image, else ``m.file``; an
    encrypted room's under ``file`` (the key to its ciphertext), another's under ``url``.
    """
    image = returned.media_type.startswith("image/")
    content: dict[str, Any] = {
        "msgtype": "m.image" if image else "m.file",
        "body": returned.name,
        "filename": returned.name,
        "info": {"mimetype": returned.media_type, "size": len(returned.data)},
        **NO_MENTIONS,  # its name is the agent's: "@room.txt" must not ping the room
    }
    if sealed is None:
        content["url"] = url
    else:
        sealed.url = ContentURI(url)
        content["file"] = sealed.serialize()
    return content


class Returned:
    """The files of one reply, the limits applied as each arrives: within the limit per file
    and, all kept together, the limit per message; of one over them only the name and why
    is kept (an agent returning image after image must not fill the gateway's memory).
    """

    def __init__(self, settings: CoreSettings) -> None:
        self.settings = settings
        self.kept: list[FileReturned] = []
        self.refused: list[tuple[str, str]] = []  # (name, why), in order
        self._used = 0

    def __bool__(self) -> bool:
        return bool(self.kept or self.refused)

    def add(self, item: FileReturned) -> None:
        settings, size = self.settings, len(item.data)
        if size > settings.attachment_max_bytes:
            limit = size_text(settings.attachment_max_bytes)
            self.refused.append(
                (item.name, f"it is {size_text(size)}, over the limit of {limit} per file")
            )
        elif self._used + size > settings.attachment_max_total:
            limit = size_text(settings.attachment_max_total)
            why = f"with it the files come to more than the limit of {limit} per message"
            self.refused.append((item.name, why))
        else:
            self._used += size
            self.kept.append(item)


async def send_files(outbox: Outbox, target: Target, returned: Returned) -> None:
    """Upload and send each file kept, then one notice naming those that could not be sent."""
    refused = list(returned.refused)
    for item in returned.kept:
        try:
            data, sealed = item.data, None
            # The homeserver keeps what it is given: in an encrypted room, only ciphertext
            # (and no name: the message, encrypted, carries it).
            if await outbox.crypto.encrypted(target.room_id):
                data, sealed = await off_loop(len(data), encrypt_attachment, data)
            url = await outbox.client.upload_media(
                data, "application/octet-stream" if sealed else item.media_type,
                None if sealed else item.name, len(data),
            )  # fmt: skip
            content = file_content(item, str(url), sealed)
            if relation := target.relation():
                content["m.relates_to"] = relation
            await outbox.send(target.room_id, content)
        except (MatrixError, OSError, aiohttp.ClientError) as exc:
            log.warning("file %s not sent to room %s: %s", item.name, target.room_id, exc)
            refused.append((item.name, f"the homeserver did not take it ({exc})"))
    if not refused:
        return
    lines = "\n".join(f"- {name}: {why}" for name, why in refused)
    text = f"📎 The agent returned files that could not be sent here:\n\n{lines}"
    try:
        await outbox.notice(target.room_id, render(text)[0], target.relation())
    except (MatrixError, OSError) as exc:
        log.error("the notice of files not sent in %s was not delivered: %s", target.room_id, exc)
