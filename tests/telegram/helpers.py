"""Updates as Telegram sends them, a runtime whose turns the test scripts, and the gateway with
the Telegram channel pointed at the fake Bot API.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from pydantic import SecretStr

from channels.telegram.channel import TelegramChannel
from contract import Command, utf16_len
from gateway.events import ErrorEvent, MessageEnd, RuntimeEvent, SessionUpdated
from gateway.runtimes.base import Runtime, RuntimeSession, Turn, UpdateListener
from slashgate.server import Running

from .fake_bot_api import BOT_ID, WAIT, FakeBotAPI

SECRET = "s3cret_for-the-tests"
USER = 777
PRIVATE = USER  # a private chat's id is the user's
GROUP = -1001234
_COMMAND = re.compile(r"(?<!\S)/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?")
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9_]{5,32}")
_ids = itertools.count(1)


def entities(text: str) -> list[dict[str, Any]]:
    """bot_command and mention entities, as Telegram marks them (offsets in UTF-16 units)."""
    found = []
    for pattern, kind in ((_COMMAND, "bot_command"), (_MENTION, "mention")):
        for match in pattern.finditer(text):
            found.append(
                {
                    "type": kind,
                    "offset": utf16_len(text[: match.start()]),
                    "length": utf16_len(match.group()),
                }
            )
    return sorted(found, key=lambda e: e["offset"])


def message_update(
    chat_id: int,
    text: str,
    *,
    user_id: int = USER,
    thread_id: int | None = None,
    reply_to_bot: bool = False,
    update_id: int | None = None,
) -> dict[str, Any]:
    """An update with a text message from ``user_id`` in ``chat_id`` (negative: a group)."""
    message_id = next(_ids)
    chat: dict[str, Any] = {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}
    if thread_id is not None:
        chat["is_forum"] = True
    message: dict[str, Any] = {
        "message_id": message_id,
        "date": int(time.time()),
        "chat": chat,
        "from": {"id": user_id, "is_bot": False, "first_name": "Ada"},
        "text": text,
    }
    if found := entities(text):
        message["entities"] = found
    if thread_id is not None:
        message["message_thread_id"] = thread_id
        message["is_topic_message"] = True
    if reply_to_bot:
        message["reply_to_message"] = {
            "message_id": message_id - 1 if message_id > 1 else message_id + 10_000,
            "date": int(time.time()),
            "chat": chat,
            "from": {"id": BOT_ID, "is_bot": True, "first_name": "Gateway"},
            "text": "an earlier answer",
        }
    return {"update_id": update_id or 10_000 + message_id, "message": message}


def callback_update(
    chat_id: int, message_id: int, data: str, user_id: int = USER
) -> dict[str, Any]:
    return {
        "update_id": 50_000 + next(_ids),
        "callback_query": {
            "id": f"cq{next(_ids)}",
            "from": {"id": user_id, "is_bot": False, "first_name": "Ada"},
            "chat_instance": "ci",
            "data": data,
            "message": {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"},
                "from": {"id": BOT_ID, "is_bot": True, "first_name": "Gateway"},
                "text": "prompt",
            },
        },
    }


@dataclass
class Served:
    server: Running
    channel: TelegramChannel
    fake: FakeBotAPI
    http: aiohttp.ClientSession

    async def post(self, update: Any, secret: str | None = SECRET) -> tuple[int, Any]:
        """POST an update to the webhook as Telegram does; (status, JSON body)."""
        headers = {} if secret is None else {"X-Telegram-Bot-Api-Secret-Token": secret}
        data = update if isinstance(update, (str, bytes)) else None
        body = None if data is not None else update
        async with self.http.post(
            f"{self.server.url}/telegram/webhook", json=body, data=data, headers=headers
        ) as resp:
            return resp.status, await resp.json(content_type=None)

    async def deliver(self, update: dict[str, Any]) -> None:
        """Post the update and wait until the channel has processed it."""
        status, body = await self.post(update)
        assert status == 200, body
        await asyncio.wait_for(self.channel.intake.drain(), WAIT)


Start = Callable[..., AbstractAsyncContextManager[Served]]


def telegram_settings(fake: FakeBotAPI, **overrides: Any) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "telegram_token": SecretStr(fake.token),
        "telegram_secret": SecretStr(SECRET),
        "telegram_api_base": fake.url,
        "telegram_mode": "webhook",
        # Telegram's limits x100: paced, but no test waits 3 s per group message
        # (tests/pacing runs them at the platform's figures, scaled).
        "telegram_rate_global": 3000.0,
        "telegram_rate_private": 100.0,
        "telegram_rate_group": 2000.0,
    }
    settings.update(overrides)
    return settings


def starter(gateway_server: Any, fake: FakeBotAPI) -> Start:
    @asynccontextmanager
    async def start(runtime: Runtime | None = None, **overrides: Any) -> AsyncIterator[Served]:
        async with (
            aiohttp.ClientSession() as http,
            gateway_server(runtime, **telegram_settings(fake, **overrides)) as server,
        ):
            channel = next(c for c in server.channels if isinstance(c, TelegramChannel))
            yield Served(server, channel, fake, http)

    return start


# -- a runtime whose turns the test scripts ---------------------------------------------------


@dataclass
class ScriptedTurn:
    turn: Turn
    events: asyncio.Queue[RuntimeEvent | None] = field(default_factory=asyncio.Queue)
    answers: dict[str, asyncio.Future[str | None]] = field(default_factory=dict)

    def emit(self, *events: RuntimeEvent) -> None:
        for event in events:
            self.events.put_nowait(event)

    def answer(self, request_id: str) -> asyncio.Future[str | None]:
        """The option chosen for ``request_id``, once the runtime is asked (maybe not yet)."""
        return self.answers.setdefault(request_id, asyncio.get_running_loop().create_future())


class ScriptedSession(RuntimeSession):
    def __init__(self, runtime: Scripted) -> None:
        self.runtime = runtime
        self.current: ScriptedTurn | None = None

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        self.current = scripted = ScriptedTurn(turn)
        await self.runtime.turns.put(scripted)
        while (event := await scripted.events.get()) is not None:
            yield event
            if isinstance(event, (MessageEnd, ErrorEvent)):
                return

    async def cancel(self) -> None:
        if self.current is not None:
            self.current.emit(MessageEnd("cancelled"))

    async def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        if self.current is None:
            return False
        future = self.current.answer(request_id)
        if future.done():
            return False
        future.set_result(option_id)
        return True


class Scripted(Runtime):
    """Every turn is handed to the test through ``turns``; the test emits its events."""

    name = "scripted"

    def __init__(self, *commands: Command, static: bool = True) -> None:
        self.commands = commands
        self.static = static  # known before any session (else only once one opens)
        self.turns: asyncio.Queue[ScriptedTurn] = asyncio.Queue()
        self.keys: list[str] = []  # conversation keys of the sessions opened

    async def open(self, key: str, updates: UpdateListener) -> RuntimeSession:
        self.keys.append(key)
        updates(SessionUpdated(commands=self.commands))
        return ScriptedSession(self)

    async def static_commands(self) -> tuple[Command, ...] | None:
        return self.commands if self.static else None

    async def next_turn(self) -> ScriptedTurn:
        return await asyncio.wait_for(self.turns.get(), WAIT)


def published(fake: FakeBotAPI, chat: int | None = None) -> list[str] | None:
    """Menu names published to the default scope, or to one chat's scope."""
    commands = fake.commands if chat is None else fake.chat_commands.get(chat)
    return None if commands is None else [c["command"] for c in commands]
