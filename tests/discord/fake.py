"""A fake Discord for tests: the REST API the channel calls through hikari (application,
commands, interaction responses and follow-ups, channel messages, the Gateway's address) and a
file host, on an ephemeral 127.0.0.1 port. It records every call, and keeps each
interaction's replies and each channel's messages as a user would see them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.http import serve_app

APPLICATION = 4242
BOT_TOKEN = "discord-bot-token"
BOT_USER = {"id": "4242", "username": "gw_bot", "discriminator": "0", "avatar": None, "bot": True}
EPHEMERAL = 64
BODY: web.RequestKey[Any] = web.RequestKey("body", object)
LIMIT = 2000  # characters of a message's content, as Discord refuses longer ones


def message_json(
    message_id: str, channel: str, author: dict[str, Any], content: str, **fields: Any
) -> dict[str, Any]:
    """A message object as Discord's API answers it and interactions carry it."""
    return {
        "id": message_id,
        "channel_id": channel,
        "author": author,
        "content": content,
        "timestamp": "2024-01-01T00:00:00+00:00",
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
        **fields,
    }


@dataclass
class Call:
    method: str
    path: str
    body: Any
    authorization: str | None
    at: float = field(default_factory=time.monotonic)


@dataclass
class Message:
    """One message of an interaction's replies: the original response or a follow-up."""

    id: int
    content: str
    flags: int = 0
    components: list[dict[str, Any]] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)  # every content it showed, in order
    deleted: bool = False

    @property
    def ephemeral(self) -> bool:
        return bool(self.flags & EPHEMERAL)


@dataclass
class FakeDiscord:
    api_base: str = ""
    calls: list[Call] = field(default_factory=list)
    originals: dict[str, Message] = field(default_factory=dict)  # by interaction token
    follow_ups: dict[str, list[Message]] = field(default_factory=lambda: defaultdict(list))
    commands: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by scope
    files: dict[str, bytes] = field(default_factory=dict)
    gateway_url: str = ""  # what GET /gateway/bot answers (tests.discord.fake_gateway)
    posted: dict[str, list[Message]] = field(
        default_factory=lambda: defaultdict(list)
    )  # by channel
    said: asyncio.Event = field(default_factory=asyncio.Event)  # a channel message was posted
    edited: asyncio.Event = field(default_factory=asyncio.Event)  # an original was edited
    followed: asyncio.Event = field(default_factory=asyncio.Event)  # a follow-up was posted
    answered: asyncio.Condition = field(default_factory=asyncio.Condition)  # after each call
    refuse_once: set[str] = field(default_factory=set)  # guilds whose next PUT of commands fails
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(10_000))

    def file_url(self, name: str) -> str:
        return self.api_base.replace("/api/v10", "") + f"/files/{name}"

    def replies(self, token: str) -> list[Message]:
        """What the user sees for the interaction of ``token``: the original response (unless
        deleted) and the follow-ups, in order.
        """
        original = self.originals.get(token)
        shown = [original] if original is not None and not original.deleted else []
        return shown + self.follow_ups.get(token, [])

    def writes(self, method: str, fragment: str = "") -> list[Call]:
        return [c for c in self.calls if c.method == method and fragment in c.path]

    async def wait(self, done: Callable[[], bool]) -> None:
        """Until ``done()`` holds, checked as each call is answered (30 s at most)."""
        async with self.answered:
            await asyncio.wait_for(self.answered.wait_for(done), 30)

    # -- the API ----------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._record])
        api = "/api/v10"
        app.router.add_get(f"{api}/oauth2/applications/@me", self._application)
        app.router.add_get(f"{api}/applications/{{app}}/commands", self._get_commands)
        app.router.add_put(f"{api}/applications/{{app}}/commands", self._put_commands)
        guild = f"{api}/applications/{{app}}/guilds/{{guild}}/commands"
        app.router.add_get(guild, self._get_commands)
        app.router.add_put(guild, self._put_commands)
        hook = f"{api}/webhooks/{{app}}/{{token}}"
        app.router.add_patch(f"{hook}/messages/@original", self._edit_original)
        app.router.add_delete(f"{hook}/messages/@original", self._delete_original)
        channel = f"{api}/channels/{{channel}}/messages"
        # An interaction's follow-ups and a channel's messages: the same calls, two paths.
        for posts, one in (
            (hook, f"{hook}/messages/{{message}}"),
            (channel, f"{channel}/{{message}}"),
        ):
            app.router.add_post(posts, self._post)
            app.router.add_patch(one, self._edit)
            app.router.add_delete(one, self._delete)
        app.router.add_get("/files/{name}", self._file)
        app.router.add_get(f"{api}/gateway/bot", self._gateway_bot)
        return app

    @web.middleware
    async def _record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if request.content_type == "application/json" else raw
        self.calls.append(
            Call(request.method, request.path, body, request.headers.get("Authorization"))
        )
        request[BODY] = body
        response = await handler(request)
        async with self.answered:
            self.answered.notify_all()
        return response

    async def _application(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "id": str(APPLICATION),
                "name": "gw",
                "icon": None,
                "description": "",
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "00" * 32,
                "flags": 0,
                "owner": BOT_USER,
                "team": None,
                "approximate_guild_count": 1,
                "approximate_user_install_count": 0,
            }
        )

    def _scope(self, request: web.Request) -> str:
        return request.match_info.get("guild", "global")

    async def _get_commands(self, request: web.Request) -> web.Response:
        return web.json_response(self.commands.get(self._scope(request), []))

    async def _put_commands(self, request: web.Request) -> web.Response:
        if self._scope(request) in self.refuse_once:
            self.refuse_once.discard(self._scope(request))
            error = {"code": 50001, "message": "Missing Access"}
            return web.json_response(error, status=403)
        stored = []
        for command in request[BODY]:
            entry = {
                "id": str(next(self._ids)),
                "application_id": str(APPLICATION),
                "version": str(next(self._ids)),
                "type": 1,
                "default_member_permissions": None,
                "nsfw": False,
                **command,
            }
            if self._scope(request) != "global":
                entry["guild_id"] = self._scope(request)
            stored.append(entry)
        self.commands[self._scope(request)] = stored
        return web.json_response(stored)

    def _message(self, message: Message) -> dict[str, Any]:
        return message_json(
            str(message.id),
            "1",
            BOT_USER,
            message.content,
            flags=message.flags,
            components=message.components,
        )

    @staticmethod
    def _numbered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Components as Discord returns them: each with its number in the message."""
        count = itertools.count(1)
        return [
            {
                **row,
                "id": next(count),
                "components": [{**c, "id": next(count)} for c in row["components"]],
            }
            for row in rows
        ]

    @staticmethod
    def _too_long(body: dict[str, Any]) -> web.Response | None:
        if len(body.get("content") or "") > LIMIT:
            error = {"code": 50035, "message": "Invalid Form Body", "errors": {}}
            return web.json_response(error, status=400)
        return None

    @classmethod
    def _update(cls, message: Message, body: dict[str, Any]) -> None:
        """An edit: the content and the buttons, each when given."""
        if "content" in body:
            message.content = body["content"] or ""
            message.edits.append(message.content)
        if "components" in body:
            message.components = cls._numbered(body["components"] or [])

    def _thread(self, request: web.Request) -> tuple[list[Message], asyncio.Event]:
        """The messages a route posts to, and the event set when one is posted: an
        interaction's follow-ups (by its token), or a channel's messages.
        """
        token = request.match_info.get("token")
        if token is not None:
            return self.follow_ups[token], self.followed
        return self.posted[request.match_info["channel"]], self.said

    def _find(self, request: web.Request) -> Message:
        thread, _ = self._thread(request)
        number = int(request.match_info["message"])
        return next(m for m in thread if m.id == number)

    async def _edit_original(self, request: web.Request) -> web.Response:
        body = request[BODY]
        refused = self._too_long(body)
        if refused is not None:
            return refused
        token = request.match_info["token"]
        message = self.originals.setdefault(token, Message(next(self._ids), ""))
        self._update(message, body)
        if "content" in body:
            self.edited.set()
        return web.json_response(self._message(message))

    async def _delete_original(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        self.originals.setdefault(token, Message(next(self._ids), "")).deleted = True
        return web.Response(status=204)

    async def _post(self, request: web.Request) -> web.Response:
        """A follow-up, or a message in a channel."""
        body = request[BODY]
        refused = self._too_long(body)
        if refused is not None:
            return refused
        message = Message(
            next(self._ids),
            body.get("content") or "",
            int(body.get("flags") or 0),
            self._numbered(body.get("components") or []),
        )
        message.edits.append(message.content)
        thread, posted = self._thread(request)
        thread.append(message)
        posted.set()
        return web.json_response(self._message(message))

    async def _edit(self, request: web.Request) -> web.Response:
        body = request[BODY]
        refused = self._too_long(body)
        if refused is not None:
            return refused
        message = self._find(request)
        self._update(message, body)
        return web.json_response(self._message(message))

    async def _delete(self, request: web.Request) -> web.Response:
        thread, _ = self._thread(request)
        thread.remove(self._find(request))
        return web.Response(status=204)

    async def _gateway_bot(self, request: web.Request) -> web.Response:
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        return web.json_response(
            {"url": self.gateway_url, "shards": 1, "session_start_limit": limit}
        )

    async def _file(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["name"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")


@asynccontextmanager
async def fake_discord(fake: FakeDiscord | None = None) -> AsyncIterator[FakeDiscord]:
    """``fake`` served (a new FakeDiscord when not given)."""
    fake = FakeDiscord() if fake is None else fake
    async with serve_app(fake.app()) as url:
        fake.api_base = f"{url}/api/v10"
        yield fake
