"""Entity ids and principals derived from conversation keys and user ids.

The server takes an entity id as one URL path segment (no ``/``, no ``*``) and a principal
id without ``/``, carried in a header. Both come from free text here (a webhook caller picks
its own conversation and user ids), so they are escaped into ``[A-Za-z0-9-]`` plus ``_XX``
escapes of the UTF-8 bytes: injective (different keys never share an entity, different
users never share a principal), readable for the usual ids, and safe in paths and headers
without further encoding.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

_SAFE = re.compile(r"[A-Za-z0-9-]")
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_ID = 120  # longer escaped ids are hashed: server paths and logs stay short
_LONE = "surrogatepass"  # JSON lets a lone surrogate into an id; it still gets its own bytes


def escape(text: str) -> str:
    """``[A-Za-z0-9-]`` kept, every other byte of the UTF-8 encoding as ``_XX``."""
    return "".join(
        ch if _SAFE.fullmatch(ch) else "".join(f"_{b:02X}" for b in ch.encode("utf-8", _LONE))
        for ch in text
    )


def check_prefix(prefix: str) -> str:
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(
            f"electric_id_prefix {prefix!r} must match {_PREFIX.pattern} "
            "(it starts every entity id)"
        )
    return prefix


def entity_id(prefix: str, key: str) -> str:
    """The entity id for a conversation key: ``<prefix>-<escaped key>``.

    Past ``MAX_ID`` characters the id becomes ``<prefix>-<start of it>.<sha256>``; the ``.``
    cannot occur in an escaped key, so a hashed id never equals an escaped one.
    """
    return _bounded(f"{prefix}-{escape(key)}", key)


def _bounded(escaped: str, raw: str) -> str:
    """``escaped``, or past ``MAX_ID`` characters its start, ``.`` and a SHA-256 of ``raw``."""
    if len(escaped) <= MAX_ID:
        return escaped
    digest = hashlib.sha256(raw.encode("utf-8", _LONE)).hexdigest()[:40]
    return f"{escaped[: MAX_ID - 41]}.{digest}"


def generation_id(base: str, generation: int) -> str:
    """The entity after ``/new`` number ``generation``: ``<id>.g<n>``. No escaped or hashed
    id ends so (escapes have no ``.``, hashes are hexadecimal), so generations never meet.
    """
    return base if generation == 0 else f"{base}.g{generation}"


def user_principal(conversation_key: str, user: str) -> str:
    """``Electric-Principal`` value for a chat user: ``user:<channel>:<escaped user id>``.

    User ids are only unique within their channel (a webhook caller names its own user), so
    the channel, the conversation key up to its first ``:``, is part of the principal: Slack's
    ``U123`` and a webhook's ``U123`` are two principals. Neither part holds a ``:`` once
    escaped, and a hashed user id keeps a ``.`` no escaped one has: the pair maps injectively.
    """
    channel = conversation_key.partition(":")[0]
    return f"user:{escape(channel)}:{_bounded(escape(user), user)}"


def principal_url(principal: str) -> str:
    """principal.ts ``principalUrl``: ``/principal/`` and the key as encodeURIComponent
    writes it (the same as ``quote`` for the characters our principals hold).
    """
    return "/principal/" + quote(principal, safe="")
