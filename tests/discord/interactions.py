"""Signed Discord interactions for tests: a key pair made per process (PyNaCl, as hikari
verifies), payloads as Discord sends them, and a client that posts them to the gateway.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from nacl.signing import SigningKey

from .fake import APPLICATION, message_json

KEY = SigningKey.generate()
PUBLIC_KEY = KEY.verify_key.encode().hex()
PATH = "/discord/interactions"
USER = "111"
CHANNEL = "555"
GUILD = "777"
_ids = itertools.count(900_000_000)


def user(user_id: str = USER) -> dict[str, Any]:
    return {"id": user_id, "username": f"user{user_id}", "discriminator": "0", "avatar": None}


def interaction(
    kind: int, data: dict[str, Any], *, user_id: str = USER, channel: str = CHANNEL, **extra: Any
) -> dict[str, Any]:
    """An interaction in a guild channel, as Discord posts it."""
    number = next(_ids)
    return {
        "id": str(number),
        "application_id": str(APPLICATION),
        "type": kind,
        "token": f"token-{number}",
        "version": 1,
        "channel_id": channel,
        "channel": {"id": channel, "type": 0},
        "guild_id": GUILD,
        "member": {
            "user": user(user_id),
            "roles": [],
            "joined_at": "2024-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "permissions": "0",
            "flags": 0,
        },
        "data": data,
        "locale": "en-US",
        "app_permissions": "0",
        "entitlements": [],
        "authorizing_integration_owners": {},
        "context": 0,
        "attachment_size_limit": 10_485_760,
        **extra,
    }


def command(
    name: str, *options: tuple[str, int, Any], resolved: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """``/name`` with options given as (name, type, value); type 3 is a string."""
    data: dict[str, Any] = {
        "id": "1",
        "name": name,
        "type": 1,
        "options": [{"name": n, "type": t, "value": v} for n, t, v in options],
    }
    if resolved:
        data["resolved"] = resolved
    return interaction(2, data, **extra)


def direct(payload: dict[str, Any], user_id: str = USER) -> dict[str, Any]:
    """The interaction as Discord sends it from a direct message: a user, no guild."""
    payload = {k: v for k, v in payload.items() if k not in ("guild_id", "member")}
    return {**payload, "user": user(user_id), "channel": {"id": payload["channel_id"], "type": 1}}


def autocomplete(name: str, option: str, value: str, *, user_id: str = USER) -> dict[str, Any]:
    data = {
        "id": "1",
        "name": name,
        "type": 1,
        "options": [{"name": option, "type": 3, "value": value, "focused": True}],
    }
    return interaction(4, data, user_id=user_id)


def click(custom_id: str, *, user_id: str = USER) -> dict[str, Any]:
    message = message_json("5", CHANNEL, user("4242"), "🔒 **Run the tool?**")
    return interaction(
        3, {"custom_id": custom_id, "component_type": 2}, user_id=user_id, message=message
    )


def signed(body: bytes, key: SigningKey = KEY, stamp: int | None = None) -> dict[str, str]:
    timestamp = str(int(time.time()) if stamp is None else stamp)
    signature = key.sign(timestamp.encode() + body).signature.hex()
    return {
        "X-Signature-Ed25519": signature,
        "X-Signature-Timestamp": timestamp,
        "Content-Type": "application/json",
    }


@dataclass
class DiscordClient:
    session: aiohttp.ClientSession
    base: str

    async def post(
        self, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """Post a signed interaction (or with ``headers`` as given); (status, JSON body)."""
        body = json.dumps(payload).encode()
        async with self.session.post(
            self.base + PATH, data=body, headers=headers if headers is not None else signed(body)
        ) as response:
            return response.status, await response.json(content_type=None)
