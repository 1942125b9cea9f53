"""A fake Slack for tests: the Web API, a response_url sink and a Socket Mode endpoint, on an
ephemeral 127.0.0.1 port; it records every call, and fails the calls a test scripts (errors,
HTML pages, broken connections: see ``Scripted``). Plus builders of signed Slack requests.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

import aiohttp
from aiohttp import web

from tests import faults

BOT_TOKEN = "xoxb-test"
APP_TOKEN = "xapp-test"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_USER = "UBOT"
TEAM = "T1"
WAIT = 5.0  # seconds any awaited call may take before a test fails
SECTION_LIMIT = 3000  # Block Kit: "must be less than 3001 characters" for a section's text

T = TypeVar("T")


def blocks_problem(blocks: Any) -> str | None:
    """What Slack objects to in ``blocks`` (a JSON string or a list), as its error says it."""
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    for index, block in enumerate(blocks or ()):
        text = (block.get("text") or {}).get("text") or ""
        if block.get("type") == "section" and len(text) > SECTION_LIMIT:
            return f"must be less than 3001 characters [json-pointer:/blocks/{index}/text/text]"
    return None


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str | None
    at: float = field(default_factory=time.monotonic)
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class Message:
    """A message as a user sees it, rebuilt from the calls that made and changed it."""

    channel: str
    ts: str
    thread_ts: str | None
    text: str
    streamed: bool = False  # made with chat.startStream (Markdown) rather than mrkdwn
    stopped: bool = False
    blocks: list[dict[str, Any]] | None = None


@dataclass
class Scripted:
    status: int = 200
    body: dict[str, Any] = field(default_factory=lambda: {"ok": True})
    headers: dict[str, str] = field(default_factory=dict)
    # Instead of ``body``: an HTML page with ``status``, or a broken connection (a "cut"
    # call is processed as usual first). See tests.faults.
    fault: faults.Kind | None = None


def server_error(status: int = 500, error: str = "fatal_error") -> Scripted:
    """A 5xx with the Web API's JSON body."""
    return Scripted(status, {"ok": False, "error": error})


def failure(kind: faults.Kind, status: int = 502) -> Scripted:
    return Scripted(status, {}, fault=kind)


class FakeSlack:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.responses: list[tuple[str, dict[str, Any]]] = []  # (response_url id, body)
        self.socket_acks: list[dict[str, Any]] = []
        self.scripts: dict[str, list[Scripted]] = defaultdict(list)
        self._changed = asyncio.Condition()
        self._ts = itertools.count(1)
        self._envelopes = itertools.count(1)
        self._socket: web.WebSocketResponse | None = None
        self._socket_open = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.files: dict[str, bytes] = {}  # file id -> bytes, served at url_private
        self.downloads: list[tuple[str, str | None]] = []  # (file id, token presented)

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_post("/respond/{id}", self._respond)
        app.router.add_get("/socket", self._socket_handler)
        app.router.add_get("/files-pri/{id}/{name}", self._file)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def api_base(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.url}/respond/{name}"

    def script(self, method: str, *replies: Scripted) -> None:
        """The next calls of ``method`` get these answers, in order; then the defaults.
        ``respond``: the next response_url posts get the statuses of these answers.
        """
        self.scripts[method].extend(replies)

    # -- waiting ----------------------------------------------------------------------------

    async def wait_for(self, check: Callable[[], T], limit: float = WAIT) -> T:
        """Wait until ``check()`` is truthy (it is run after every recorded call)."""
        async with self._changed:
            return await asyncio.wait_for(self._changed.wait_for(check), limit)

    def of(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    def messages(self, channel: str | None = None) -> list[Message]:
        """Messages the bot posted and what they show now, oldest first."""
        made: dict[str, Message] = {}
        for call in self.calls:
            p, ok = call.params, call.result.get("ok")
            if not ok:
                continue
            if call.method in ("chat.postMessage", "chat.startStream"):
                streamed = call.method == "chat.startStream"
                text = p.get("markdown_text" if streamed else "text") or ""
                blocks = p.get("blocks")
                if isinstance(blocks, str):
                    blocks = json.loads(blocks)
                ts = call.result["ts"]
                made[ts] = Message(
                    p["channel"], ts, p.get("thread_ts"), text, streamed, False, blocks
                )
            elif call.method == "chat.update" and p.get("ts") in made:
                made[p["ts"]].text = p.get("text", "")
                blocks = p.get("blocks")
                made[p["ts"]].blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
            elif call.method == "chat.delete":
                made.pop(p.get("ts", ""), None)
            elif call.method in ("chat.appendStream", "chat.stopStream") and p.get("ts") in made:
                message = made[p["ts"]]
                message.text += p.get("markdown_text") or ""
                message.stopped = call.method == "chat.stopStream"
        return [m for m in made.values() if channel is None or m.channel == channel]

    async def wait_calls(self, method: str, count: int = 1) -> list[Call]:
        await self.wait_for(lambda: len(self.of(method)) >= count)
        return self.of(method)

    def responses_to(self, name: str) -> list[dict[str, Any]]:
        return [body for target, body in self.responses if target == name]

    async def wait_responses(self, name: str, count: int = 1) -> list[dict[str, Any]]:
        await self.wait_for(lambda: len(self.responses_to(name)) >= count)
        return self.responses_to(name)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- Web API ----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        else:
            params.update(parse_qsl((await request.read()).decode()))
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ") if header else params.pop("token", None)
        call = Call(method, params, token)
        reply = self.scripts[method].pop(0) if self.scripts[method] else None
        response: web.StreamResponse | None = None
        if reply is not None and reply.fault != "cut":
            call.result = reply.body
            if reply.fault == "page":  # text/html, unless the script says otherwise
                response = faults.page(reply.status, f"{reply.status} Bad Gateway")
                response.headers.update(reply.headers)
            elif reply.fault is None:
                response = web.json_response(reply.body, status=reply.status, headers=reply.headers)
        else:
            expected = APP_TOKEN if method == "apps.connections.open" else BOT_TOKEN
            ok = token == expected
            call.result = (
                self._default(method, params) if ok else {"ok": False, "error": "invalid_auth"}
            )
            response = None if reply is not None else web.json_response(call.result)
        self.calls.append(call)
        await self._notify()
        if response is not None:
            return response
        assert reply is not None
        if reply.fault == "drop":
            return faults.drop(request)
        if reply.fault == "hang":
            return await faults.hang()
        return await faults.cut_off(request, call.result)

    def _default(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel")
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://test.slack.com/",
                "team": "Test",
                "user": "slashgate",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": "BBOT",
            }
        problem = blocks_problem(params.get("blocks"))
        if problem is not None:
            return {"ok": False, "error": "invalid_blocks", "errors": [problem]}
        if method in ("chat.postMessage", "chat.startStream"):
            return {"ok": True, "channel": channel, "ts": f"1700000000.{next(self._ts):06d}"}
        if method in ("chat.update", "chat.appendStream", "chat.stopStream"):
            return {"ok": True, "channel": channel, "ts": params.get("ts")}
        if method in ("reactions.add", "reactions.remove", "chat.delete"):
            return {"ok": True}
        if method == "apps.connections.open":
            return {"ok": True, "url": self.url.replace("http", "ws", 1) + "/socket"}
        return {"ok": False, "error": "unknown_method"}

    # -- response_url -----------------------------------------------------------------------

    async def _respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        if self.scripts["respond"]:  # a response_url failing: a status and a text body
            reply = self.scripts["respond"].pop(0)
            return web.Response(status=reply.status, text="internal error")
        if blocks_problem(body.get("blocks")) is not None:
            return web.Response(status=400, text="invalid_blocks")
        self.responses.append((request.match_info["id"], body))
        await self._notify()
        return web.Response(text="ok")

    # -- files ------------------------------------------------------------------------------

    def add_file(self, data: bytes, name: str, mimetype: str) -> dict[str, Any]:
        """Store a file as if a user had shared it: its object for a message's ``files``."""
        file_id = f"F{len(self.files) + 1:08d}"
        self.files[file_id] = data
        url = f"{self.url}/files-pri/{TEAM}-{file_id}/{name}"
        return {
            "id": file_id, "name": name, "title": name, "mimetype": mimetype,
            "filetype": name.rpartition(".")[2], "size": len(data), "mode": "hosted",
            "is_external": False, "url_private": url, "url_private_download": url + "?dl=1",
        }  # fmt: skip

    async def _file(self, request: web.Request) -> web.Response:
        """url_private: the file for the bot token; without it, Slack's sign-in page."""
        file_id = request.match_info["id"].removeprefix(f"{TEAM}-")
        header = request.headers.get("Authorization", "")
        token = header.removeprefix("Bearer ") if header else None
        self.downloads.append((file_id, token))
        await self._notify()
        if token != BOT_TOKEN or file_id not in self.files:
            page = "<!DOCTYPE html><html><title>Sign in | Slack</title></html>"
            return web.Response(text=page, content_type="text/html")
        return web.Response(body=self.files[file_id], content_type="application/octet-stream")

    # -- Socket Mode ------------------------------------------------------------------------

    async def _socket_handler(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._socket = socket
        await socket.send_json({"type": "hello", "num_connections": 1})
        self._socket_open.set()
        async for message in socket:
            if message.type == aiohttp.WSMsgType.TEXT:
                self.socket_acks.append(json.loads(message.data))
                await self._notify()
        return socket

    async def push(self, kind: str, payload: dict[str, Any]) -> str:
        """Send an envelope (``events_api``, ``slash_commands``, ``interactive``); its id."""
        await asyncio.wait_for(self._socket_open.wait(), WAIT)
        assert self._socket is not None
        envelope_id = f"env-{next(self._envelopes)}"
        await self._socket.send_json(
            {
                "envelope_id": envelope_id,
                "type": kind,
                "accepts_response_payload": kind != "events_api",
                "retry_attempt": 0,
                "retry_reason": "",
                "payload": payload,
            }
        )
        return envelope_id


@asynccontextmanager
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.stop()


# -- signed requests as Slack sends them ----------------------------------------------------


def signature(body: str, timestamp: int, secret: str = SIGNING_SECRET) -> str:
    """Slack's v0 scheme: HMAC-SHA256 of ``v0:{timestamp}:{body}`` with the signing secret."""
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(
    body: str, content_type: str, timestamp: int | None = None, secret: str = SIGNING_SECRET
) -> dict[str, str]:
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": str(stamp),
        "X-Slack-Signature": signature(body, stamp, secret),
    }


_event_ids = itertools.count(1)


def event_body(event: dict[str, Any], event_id: str | None = None) -> str:
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM,
            "api_app_id": "A1",
            "event": event,
            "type": "event_callback",
            "event_id": event_id or f"Ev{next(_event_ids):08d}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        }
    )


def mention(text: str, *, channel: str = "C1", ts: str, thread_ts: str | None = None,
            user: str = "U1") -> dict[str, Any]:  # fmt: skip
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER}> {text}",
        "ts": ts,
        "channel": channel,
        "team": TEAM,
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def direct_message(text: str, *, channel: str = "D1", ts: str, user: str = "U1",
                   **extra: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "type": "message",
        "channel_type": "im",
        "user": user,
        "text": text,
        "ts": ts,
        "channel": channel,
        "team": TEAM,
        "event_ts": ts,
        **extra,
    }


_TRIGGERS = itertools.count(1)


def command_body(command: str, text: str, *, channel: str = "C1", user: str = "U1",
                 response_url: str) -> str:  # fmt: skip
    return urlencode(
        {
            "token": "legacy",
            "team_id": TEAM,
            "team_domain": "test",
            "channel_id": channel,
            "channel_name": "general",
            "user_id": user,
            "user_name": "ann",
            "command": command,
            "text": text,
            "api_app_id": "A1",
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": f"1.2.{next(_TRIGGERS)}",  # unique per invocation, as Slack's
        }
    )


def action_body(payload: dict[str, Any]) -> str:
    return urlencode({"payload": json.dumps(payload)})


class SlackClient:
    """Posts signed requests to the gateway's ``/slack/events``."""

    def __init__(self, session: aiohttp.ClientSession, gateway_url: str) -> None:
        self.session = session
        self.url = gateway_url + "/slack/events"

    async def post(self, body: str, content_type: str, **headers: str) -> tuple[int, str]:
        all_headers = {**signed_headers(body, content_type), **headers}
        async with self.session.post(self.url, data=body.encode(), headers=all_headers) as resp:
            return resp.status, await resp.text()

    async def event(self, event: dict[str, Any], event_id: str | None = None,
                    **headers: str) -> tuple[int, str]:  # fmt: skip
        return await self.post(event_body(event, event_id), "application/json", **headers)

    async def command(self, command: str, text: str, **kwargs: Any) -> tuple[int, str]:
        return await self.post(
            command_body(command, text, **kwargs), "application/x-www-form-urlencoded"
        )

    async def action(self, payload: dict[str, Any]) -> tuple[int, str]:
        return await self.post(action_body(payload), "application/x-www-form-urlencoded")
