"""A fake Telegram Bot API on 127.0.0.1: checks parameters as Telegram does, records what was
sent, and can inject failures (429 with retry_after, any error for the next matching call, a
redirect back to the same URL until aiohttp gives up, an HTML page quoting the URL, a
connection dropped before the call or cut off after it, a call left unanswered).

What it checks, after the Bot API documentation:
- command names ``[a-z0-9_]{1,32}``, descriptions 1-256 characters, at most 100 commands;
- message text 1-4096 characters after entity parsing (sendMessageDraft: 0-4096);
- HTML parse mode: only Telegram's tags, properly closed, the nesting rules (bold, italic,
  underline, strikethrough and spoiler may not contain or sit in code/pre; code, pre and
  links do not contain each other, except pre's inner code; blockquotes do not nest),
  otherwise "Bad Request: can't parse entities: ...";
- editMessageText with the same text and markup: "message is not modified";
- sendMessageDraft only in private chats (positive chat ids here; groups are negative);
- getFile: an unknown file_id is "Bad Request: invalid file_id", a file over 20 MB "Bad
  Request: file is too big"; files are served at ``/file/bot<token>/<file_path>``;
- opt in (``enforce``): Telegram's rate limits, answered with 429 and a retry_after.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import math
import re
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from contract import utf16_len
from tests import faults

TOKEN = "123456:TEST-token_for-the-fake"
BOT_ID = 123456
WAIT = 10.0
REDIRECTS = 10  # aiohttp's limit: the call fails at the tenth redirect
DOWNLOAD_LIMIT = 20 * 1000 * 1000  # getFile: "file is too big" above it

COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")
_JSON_FIELDS = {
    "commands", "reply_markup", "reply_parameters", "allowed_updates", "scope", "reaction",
}  # fmt: skip
_TAGS = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline",
    "ins": "underline", "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
    "tg-spoiler": "spoiler", "span": "spoiler", "a": "text_link", "code": "code", "pre": "pre",
    "blockquote": "blockquote", "tg-emoji": "custom_emoji",
}  # fmt: skip
_STYLES = {"bold", "italic", "underline", "strikethrough", "spoiler"}
_FIXED = {"code", "pre"}
_VALUE = r"(?:=\"[^\"]*\"|='[^']*'|=[^\s>]+)?"
_TAG = re.compile(rf"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[a-zA-Z-]+{_VALUE})*)\s*>")
_ATTR = re.compile(r"([a-zA-Z-]+)(?:=(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+)))?")
_ENTITY = re.compile(r"&(lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);")
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)


class ApiError(Exception):
    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None):
        super().__init__(description)
        self.code, self.description, self.parameters = code, description, parameters


def parse_html(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(plain text, entities) as Telegram's HTML parse mode gives them, or ApiError."""
    plain: list[str] = []
    size = 0  # UTF-16 units so far
    stack: list[tuple[str, str, int, dict[str, str]]] = []  # (tag, entity type, start, attrs)
    entities: list[dict[str, Any]] = []

    def refuse(why: str) -> ApiError:
        return ApiError(400, f"Bad Request: can't parse entities: {why}")

    pos = 0
    while pos < len(text):
        char = text[pos]
        if char == "<":
            match = _TAG.match(text, pos)
            offset = len(text[:pos].encode())
            if match is None:
                raise refuse(f"Unsupported start tag at byte offset {offset}")
            closing, name, raw_attrs = match.group(1), match.group(2).lower(), match.group(3)
            kind = _TAGS.get(name)
            if kind is None:
                raise refuse(f'Unsupported start tag "{name}" at byte offset {offset}')
            if closing:
                if not stack or stack[-1][0] != name:
                    expected = f"</{stack[-1][0]}>" if stack else "nothing"
                    raise refuse(
                        f'Unmatched end tag at byte offset {offset}, expected "{expected}", '
                        f'found "</{name}>"'
                    )
                _, kind, start, attrs = stack.pop()
                if kind == "code" and stack and stack[-1][1] == "pre":  # <pre><code class=..>
                    if "class" in attrs:
                        stack[-1][3]["language"] = attrs["class"].removeprefix("language-")
                elif size > start:  # an empty entity is dropped
                    entity: dict[str, Any] = {"type": kind, "offset": start, "length": size - start}
                    if kind == "text_link":
                        entity["url"] = attrs["href"]
                    if kind == "pre" and "language" in attrs:
                        entity["language"] = attrs["language"]
                    entities.append(entity)
            else:
                attrs = {
                    m.group(1).lower(): html.unescape(m.group(2) or m.group(3) or m.group(4) or "")
                    for m in _ATTR.finditer(raw_attrs)
                }
                if name == "span" and attrs.get("class") != "tg-spoiler":
                    raise refuse(f'Unsupported start tag "span" at byte offset {offset}')
                if kind == "text_link" and not attrs.get("href"):
                    raise refuse(f"Can't find href attribute at byte offset {offset}")
                _check_nesting(kind, [s[1] for s in stack], refuse)
                stack.append((name, kind, size, attrs))
            pos = match.end()
        elif char == "&":
            match = _ENTITY.match(text, pos)
            if match is None:
                decoded, pos = "&", pos + 1
            else:
                decoded, pos = html.unescape(match.group(0)), match.end()
            plain.append(decoded)
            size += utf16_len(decoded)
        else:
            stops = (i for i in (text.find("<", pos), text.find("&", pos)) if i >= 0)
            end = min(stops, default=len(text))
            piece = text[pos:end]
            plain.append(piece)
            size += utf16_len(piece)
            pos = end
    if stack:
        raise refuse(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    return "".join(plain), sorted(entities, key=lambda e: (e["offset"], -e["length"]))


def _check_nesting(kind: str, open_kinds: list[str], refuse: Callable[[str], ApiError]) -> None:
    if not open_kinds:
        return
    inner = open_kinds[-1]
    if kind == "code" and inner == "pre" and open_kinds.count("pre") == 1:
        return  # the language marker of a pre block
    if any(k in _FIXED for k in open_kinds):
        raise refuse(f"{kind} entity can't be inside a code or pre entity")
    if kind in _FIXED and any(k in _STYLES for k in open_kinds):
        raise refuse(f"{kind} entity can't be inside bold, italic, underline or spoiler")
    if kind in _FIXED | {"text_link"} and any(k in _FIXED | {"text_link"} for k in open_kinds):
        raise refuse(f"{kind} entity can't be inside another such entity")
    if kind == "blockquote" and "blockquote" in open_kinds:
        raise refuse("blockquote entities can't be nested")


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


@dataclass
class Sent:
    """A message as it stands in the chat (after edits)."""

    chat_id: int
    message_id: int
    text: str  # what the user sees
    entities: list[dict[str, Any]]
    raw: str  # what the bot sent (HTML or plain)
    parse_mode: str | None
    reply_markup: Any = None
    thread_id: int | None = None
    reply_to: int | None = None
    edits: int = 0


FaultKind = Literal["json", faults.Kind]
# The calls the rate limits count: those that put a message in a chat or change its text.
LIMITED = frozenset({"sendMessage", "editMessageText", "sendMessageDraft"})


@dataclass(frozen=True)
class Limit:
    """``count`` calls per ``period`` seconds, in bursts of at most ``burst`` (a generic cell
    rate algorithm: each call moves the key's theoretical arrival time one interval on).
    """

    count: float
    period: float
    burst: int

    @property
    def interval(self) -> float:
        return self.period / self.count


@dataclass
class Limits:
    """Telegram's figures (core.telegram.org/bots/faq): about 30 messages a second per bot,
    about one a second in a chat ("short bursts" allowed: 3 here), 20 a minute in a group.
    ``scale`` multiplies every rate, for tests that must not take minutes.
    """

    scale: float = 1.0
    overall: Limit = Limit(30, 1.0, 30)
    private: Limit = Limit(1, 1.0, 3)
    group: Limit = Limit(20, 60.0, 20)
    _due: dict[str, float] = field(default_factory=dict)

    def refuse(self, method: str, params: dict[str, Any]) -> int | None:
        """The retry_after (seconds) for a call over a limit, else None (and it counts)."""
        if method not in LIMITED:
            return None
        chat = int(params.get("chat_id", 0))
        keys = [("bot", self.overall), (f"chat{chat}", self.private if chat > 0 else self.group)]
        now = time.monotonic()
        over = 0.0
        for key, limit in keys:
            interval = limit.interval / self.scale
            due = self._due.get(key, now)
            over = max(over, due - now - (limit.burst - 1) * interval)
        if over > 0:
            return max(1, math.ceil(over))
        for key, limit in keys:
            self._due[key] = max(self._due.get(key, now), now) + limit.interval / self.scale
        return None


@dataclass
class Fault:
    code: int
    description: str
    parameters: dict[str, Any] | None
    when: Callable[[dict[str, Any]], bool]
    kind: FaultKind = "json"  # the Bot API's own error, or see tests.faults (pages quote the path)


class FakeBotAPI:
    def __init__(self, token: str = TOKEN, username: str = "gw_bot") -> None:
        self.token = token
        self.username = username
        self.url = ""
        self.calls: list[Call] = []
        self.errors: list[tuple[str, str]] = []  # (method, description) of refused calls
        self.sent: dict[tuple[int, int], Sent] = {}
        self.drafts: list[Call] = []
        self.commands: list[dict[str, str]] | None = None  # the default scope
        self.chat_commands: dict[int, list[dict[str, str]]] = {}  # BotCommandScopeChat
        self.group_commands: list[dict[str, str]] | None = None  # BotCommandScopeAllGroupChats
        self.webhook: dict[str, Any] | None = None
        self.reactions: dict[tuple[int, int], list[dict[str, Any]]] = {}  # current, by message
        self.deleted: list[Sent] = []
        self._updates: deque[dict[str, Any]] = deque()
        self.files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, bytes)
        self.downloads: list[str] = []  # file paths downloaded
        self.expired: set[str] = set()  # file paths whose download answers 404
        self._next_id: defaultdict[int, int] = defaultdict(lambda: 1)
        self._faults: defaultdict[str, deque[Fault]] = defaultdict(deque)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        # Seconds each call of a method takes before Telegram acts on it: a caller that goes
        # away meanwhile (killed) leaves no trace, as a request that never fully arrived.
        self.latency: Callable[[str], float] = lambda method: 0.0
        self.limits: Limits | None = None  # off unless a test turns them on (``enforce``)

    # -- the server -----------------------------------------------------------------------

    async def __aenter__(self) -> FakeBotAPI:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._dispatch)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    # -- test controls --------------------------------------------------------------------

    def enforce(self, limits: Limits) -> None:
        """From now on, answer calls over Telegram's rate limits with 429 (see ``Limits``)."""
        self.limits = limits

    def flooded(self) -> list[str]:
        """The methods of the calls refused with 429, in order."""
        return [method for method, text in self.errors if text.startswith("Too Many Requests")]

    def inject(
        self,
        method: str,
        code: int,
        description: str,
        *,
        parameters: dict[str, Any] | None = None,
        times: int = 1,
        when: Callable[[dict[str, Any]], bool] = lambda params: True,
    ) -> None:
        """Fail the next ``times`` calls of ``method`` (matching ``when``) with this error."""
        for _ in range(times):
            self._faults[method].append(Fault(code, description, parameters, when))

    def flood(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        """Answer the next calls of ``method`` with 429 Too Many Requests."""
        self.inject(
            method, 429, f"Too Many Requests: retry after {retry_after}",
            parameters={"retry_after": retry_after}, times=times,
        )  # fmt: skip

    def wrong_server(self, method: str) -> None:
        """Answer the next call of ``method`` as a server that is not the Bot API may: an
        HTML 404 page quoting the request path, token included.
        """
        self.fail(method, "page", code=404)

    def fail(
        self,
        method: str,
        kind: FaultKind,
        *,
        code: int = 502,
        times: int = 1,
        when: Callable[[dict[str, Any]], bool] = lambda params: True,
    ) -> None:
        """The next ``times`` calls of ``method`` (matching ``when``) fail this way (see
        ``Fault``).
        """
        for _ in range(times):
            self._faults[method].append(Fault(code, "", None, when, kind))

    def redirect_loop(self, method: str, calls: int = 1) -> None:
        """Redirect the next ``calls`` calls of ``method`` to themselves until aiohttp gives
        up (TooManyRedirects, whose text quotes the URL, token included).
        """
        self.inject(method, 307, "redirect", times=REDIRECTS * calls)

    def add_file(self, data: bytes, path: str, **fields: Any) -> dict[str, Any]:
        """Store a file as if a user had sent it: its object for an update (file_id,
        file_unique_id, file_size, plus ``fields`` such as width or mime_type).
        """
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = (path, data)
        return {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": len(data),
                **fields}  # fmt: skip

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _answer_error(ApiError(401, "Unauthorized"))
        path = request.match_info["path"]
        found = next((data for p, data in self.files.values() if p == path), None)
        if found is None or path in self.expired:
            return _answer_error(ApiError(404, "Not Found"))
        self.downloads.append(path)
        return web.Response(body=found, content_type="application/octet-stream")

    async def push_update(self, *updates: dict[str, Any]) -> None:
        """Queue updates for getUpdates (long polling): one answer holds all that wait."""
        self._updates.extend(updates)
        await self._notify()

    def calls_to(self, method: str, scope: str | None = None) -> list[Call]:
        """The calls of ``method``; with ``scope``, those to that scope type only."""
        return [
            c
            for c in self.calls
            if c.method == method
            and (scope is None or (c.params.get("scope") or {"type": "default"})["type"] == scope)
        ]

    def messages(self, chat_id: int) -> list[Sent]:
        """The chat's messages from the bot, in order."""
        mine = (s for s in self.sent.values() if s.chat_id == chat_id)
        return sorted(mine, key=lambda s: s.message_id)

    def texts(self, chat_id: int) -> list[str]:
        return [s.text for s in self.messages(chat_id)]

    async def wait(self, predicate: Callable[[], bool]) -> None:
        """Until ``predicate()`` holds, re-checked after every request (at most WAIT seconds)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), WAIT)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- requests -------------------------------------------------------------------------

    async def _dispatch(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _answer_error(ApiError(401, "Unauthorized"))
        method = request.match_info["method"]
        params = await _params(request)
        delay = self.latency(method)
        if delay:
            await asyncio.sleep(delay)  # cancelled with the request if the caller goes
        self.calls.append(Call(method, params))
        await self._notify()  # a long poll answers late: the call itself is news
        cut = False
        try:
            wait = None if self.limits is None else self.limits.refuse(method, params)
            if wait is not None:
                raise ApiError(429, f"Too Many Requests: retry after {wait}", {"retry_after": wait})
            for fault in list(self._faults[method]):
                if fault.when(params):
                    self._faults[method].remove(fault)
                    if fault.kind == "page":
                        return faults.page(fault.code, f"Cannot POST {request.path}")
                    if fault.kind == "drop":
                        return faults.drop(request)
                    if fault.kind == "hang":
                        return await faults.hang()
                    cut = fault.kind == "cut"
                    if cut:
                        break
                    if 300 <= fault.code < 400:
                        return web.Response(status=fault.code, headers={"Location": request.path})
                    raise ApiError(fault.code, fault.description, fault.parameters)
            handler = getattr(self, f"_m_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found: method not found")
            result = await handler(params)
        except ApiError as exc:
            self.errors.append((method, exc.description))
            return _answer_error(exc)
        finally:
            await self._notify()
        if cut:
            return await faults.cut_off(request, {"ok": True, "result": result})
        return web.json_response({"ok": True, "result": result})

    def _me(self) -> dict[str, Any]:
        return {"id": BOT_ID, "is_bot": True, "first_name": "Gateway", "username": self.username}

    async def _m_getMe(self, params: dict[str, Any]) -> Any:
        return self._me()

    async def _m_setMyCommands(self, params: dict[str, Any]) -> Any:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise ApiError(400, "Bad Request: commands must be an array")
        if len(commands) > 100:
            raise ApiError(400, "Bad Request: BOT_COMMANDS_TOO_MUCH")
        for command in commands:
            name, description = command.get("command", ""), command.get("description", "")
            if not COMMAND_NAME.fullmatch(name):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(description.strip()) <= 256 or len(description) > 256:
                raise ApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        names = [c["command"] for c in commands]
        if len(set(names)) != len(names):
            raise ApiError(400, "Bad Request: BOT_COMMAND_DUPLICATE")
        self._scoped(params, commands)
        return True

    async def _m_deleteMyCommands(self, params: dict[str, Any]) -> Any:
        self._scoped(params, None)
        return True

    def _scoped(self, params: dict[str, Any], commands: list[dict[str, str]] | None) -> None:
        """Keep (None: drop) the commands of the call's scope."""
        scope = params.get("scope") or {"type": "default"}
        if scope.get("type") == "chat":
            if not isinstance(scope.get("chat_id"), int):
                raise ApiError(400, "Bad Request: chat not found")
            if commands is None:
                self.chat_commands.pop(scope["chat_id"], None)
            else:
                self.chat_commands[scope["chat_id"]] = commands
        elif scope.get("type") == "all_group_chats":
            self.group_commands = commands
        elif scope.get("type") == "default":
            self.commands = commands
        else:
            raise ApiError(400, "Bad Request: unsupported scope in this fake")

    def menu_in(self, chat: int) -> list[str] | None:
        """The menu names a user sees in ``chat``, resolved as Telegram does: the chat's
        scope, then (a group: negative ids) all groups', then the default.
        """
        found = self.chat_commands.get(chat)
        if found is None and chat < 0:
            found = self.group_commands
        found = self.commands if found is None else found
        return None if found is None else [c["command"] for c in found]

    async def _m_getMyCommands(self, params: dict[str, Any]) -> Any:
        return self.commands or []

    async def _m_setWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook = params
        return True

    async def _m_deleteWebhook(self, params: dict[str, Any]) -> Any:
        self.webhook = None
        return True

    async def _m_getUpdates(self, params: dict[str, Any]) -> Any:
        if self.webhook is not None:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = int(params.get("offset", 0))
        while self._updates and self._updates[0]["update_id"] < offset:
            self._updates.popleft()  # confirmed
        timeout = float(params.get("timeout", 0))
        if not self._updates and timeout > 0:
            async with self._changed:
                with contextlib.suppress(TimeoutError):
                    news = self._changed.wait_for(lambda: bool(self._updates))
                    await asyncio.wait_for(news, timeout)
        limit = int(params.get("limit", 100))
        return list(self._updates)[:limit]

    async def _m_getFile(self, params: dict[str, Any]) -> Any:
        found = self.files.get(str(params.get("file_id")))
        if found is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        path, data = found
        if len(data) > DOWNLOAD_LIMIT:
            raise ApiError(400, "Bad Request: file is too big")
        file_id = str(params["file_id"])
        return {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": len(data),
                "file_path": path}  # fmt: skip

    async def _m_sendChatAction(self, params: dict[str, Any]) -> Any:
        _chat(params)
        return True

    async def _m_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        return True

    async def _m_sendMessage(self, params: dict[str, Any]) -> Any:
        chat_id = _chat(params)
        text, entities = _text(params, empty_ok=False)
        reply = params.get("reply_parameters") or {}
        message_id = self._next_id[chat_id]
        self._next_id[chat_id] += 1
        sent = Sent(
            chat_id, message_id, text, entities, params["text"], params.get("parse_mode"),
            params.get("reply_markup"), _int(params.get("message_thread_id")),
            _int(reply.get("message_id")),
        )  # fmt: skip
        self.sent[(chat_id, message_id)] = sent
        return self._message(sent)

    async def _m_editMessageText(self, params: dict[str, Any]) -> Any:
        sent = self._find(params)
        text, entities = _text(params, empty_ok=False)
        markup = params.get("reply_markup")
        if (text, entities, markup) == (sent.text, sent.entities, sent.reply_markup):
            raise ApiError(400, NOT_MODIFIED)
        sent.text, sent.entities, sent.reply_markup = text, entities, markup
        sent.raw, sent.parse_mode = params["text"], params.get("parse_mode")
        sent.edits += 1
        return self._message(sent)

    async def _m_setMessageReaction(self, params: dict[str, Any]) -> Any:
        chat_id = _chat(params)
        reaction = params.get("reaction") or []
        if any(r.get("type") != "emoji" or not r.get("emoji") for r in reaction):
            raise ApiError(400, "Bad Request: REACTION_INVALID")
        self.reactions[(chat_id, _int(params.get("message_id")) or 0)] = reaction
        return True

    async def _m_deleteMessage(self, params: dict[str, Any]) -> Any:
        sent = self._find(params)
        self.deleted.append(self.sent.pop((sent.chat_id, sent.message_id)))
        return True

    async def _m_editMessageReplyMarkup(self, params: dict[str, Any]) -> Any:
        sent = self._find(params)
        markup = params.get("reply_markup")
        if markup == sent.reply_markup:
            raise ApiError(400, NOT_MODIFIED)
        sent.reply_markup = markup
        return self._message(sent)

    async def _m_sendMessageDraft(self, params: dict[str, Any]) -> Any:
        chat_id = _chat(params)
        if chat_id < 0:
            raise ApiError(400, "Bad Request: drafts can be sent only to private chats")
        if not _int(params.get("draft_id")):
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        _text(params, empty_ok=True)
        self.drafts.append(self.calls[-1])
        return True

    def _find(self, params: dict[str, Any]) -> Sent:
        key = (_chat(params), _int(params.get("message_id")) or 0)
        if key not in self.sent:
            raise ApiError(400, "Bad Request: message to edit not found")
        return self.sent[key]

    def _message(self, sent: Sent) -> dict[str, Any]:
        kind = "private" if sent.chat_id > 0 else "supergroup"
        message: dict[str, Any] = {
            "message_id": sent.message_id,
            "date": int(time.time()),
            "chat": {"id": sent.chat_id, "type": kind},
            "from": self._me(),
            "text": sent.text,
        }
        if sent.entities:
            message["entities"] = sent.entities
        if sent.reply_markup:
            message["reply_markup"] = sent.reply_markup
        return message


async def _params(request: web.Request) -> dict[str, Any]:
    params: dict[str, Any] = dict(request.query)
    if request.content_type == "application/json":
        params.update(await request.json())
    elif request.can_read_body:
        params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
    for key in _JSON_FIELDS & params.keys():
        if isinstance(params[key], str):
            params[key] = json.loads(params[key])
    return params


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _chat(params: dict[str, Any]) -> int:
    try:
        return int(params["chat_id"])
    except (KeyError, ValueError):
        raise ApiError(400, "Bad Request: chat not found") from None


def _text(params: dict[str, Any], *, empty_ok: bool) -> tuple[str, list[dict[str, Any]]]:
    raw = params.get("text", "")
    mode = (params.get("parse_mode") or "").lower()
    if mode == "html":
        text, entities = parse_html(raw)
    elif mode:
        raise ApiError(400, f"Bad Request: unsupported parse_mode {mode!r} in this fake")
    else:
        text, entities = raw, []
    if not text.strip() and not empty_ok:
        raise ApiError(400, "Bad Request: message text is empty")
    if len(text) > 4096:  # Telegram counts characters here, not UTF-16 units
        raise ApiError(400, "Bad Request: message is too long")
    return text, entities


def _answer_error(exc: ApiError) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": exc.code, "description": exc.description}
    if exc.parameters:
        body["parameters"] = exc.parameters
    return web.json_response(body, status=exc.code)
