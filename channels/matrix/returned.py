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

from mautrix.crypto.attachments import encrypt_attachment
from mautrix.errors import MatrixError
from mautrix.types import ContentURI, EncryptedFile

from gateway.api import FileReturned
from gateway.attachments import size_text
from gateway.settings import CoreSettings

from .outbox import Outbox, Target
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
    }
    if sealed is None:
        content["url"] = url
    else:
        sealed.url = ContentURI(url)
        content["file"] = sealed.serialize()
    return content


def over_limits(returned: list[FileReturned], settings: CoreSettings) -> dict[int, str]:
    """Why each file over the attachment limits is not sent, by its place in ``returned``:
    each file within the limit per file, all of those sent within the limit per message.
    """
    why: dict[int, str] = {}
    used = 0
    for i, item in enumerate(returned):
        size = len(item.data)
        if size > settings.attachment_max_bytes:
            limit = size_text(settings.attachment_max_bytes)
            why[i] = f"it is {size_text(size)}, over the limit of {limit} per file"
        elif used + size > settings.attachment_max_total:
            limit = size_text(settings.attachment_max_total)
            why[i] = f"with it the files come to more than the limit of {limit} per message"
        else:
            used += size
    return why


async def send_files(
    outbox: Outbox, target: Target, returned: list[FileReturned], settings: CoreSettings
) -> None:
    """Upload and send each file, then one notice naming those that could not be sent."""
    refused = over_limits(returned, settings)
    for i, item in enumerate(returned):
        if i in refused:
            continue
        try:
            data, sealed = item.data, None
            # The homeserver keeps what it is given: in an encrypted room, only ciphertext.
            if await outbox.crypto.encrypted(target.room_id):
                data, sealed = encrypt_attachment(item.data)
            url = await outbox.client.upload_media(
                data, "application/octet-stream" if sealed else item.media_type, item.name,
                len(data),
            )  # fmt: skip
            content = file_content(item, str(url), sealed)
            if relation := target.relation():
                content["m.relates_to"] = relation
            await outbox.send(target.room_id, content)
        except (MatrixError, OSError) as exc:
            log.warning("file %s not sent to room %s: %s", item.name, target.room_id, exc)
            refused[i] = f"the homeserver did not take it ({exc})"
    if not refused:
        return
    lines = "\n".join(f"- {returned[i].name}: {why}" for i, why in sorted(refused.items()))
    text = f"📎 The agent returned files that could not be sent here:\n\n{lines}"
    try:
        await outbox.notice(target.room_id, render(text)[0], target.relation())
    except (MatrixError, OSError) as exc:
        log.error("the notice of files not sent in %s was not delivered: %s", target.room_id, exc)
