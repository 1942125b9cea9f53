"""Logging: text or JSON lines, with what the line is about (channel, conversation, turn,
platform message id) taken from context variables the core sets, a line's own fields (a turn's
outcome and duration, ``fields``), and every configured secret masked in whatever is written,
tracebacks included.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from aiohttp.http_exceptions import HttpProcessingError
from pydantic import SecretStr

if TYPE_CHECKING:
    from .settings import CoreSettings

LogFormat = Literal["text", "json"]
FIELDS = ("channel", "conversation", "turn_id", "message_id")
MASK = "[secret]"
MIN_SECRET = 4  # shorter values would mask ordinary words; no real token is that short


class Bound:
    """What the current task's log lines are about: one input (channel, conversation,
    message_id) and, while its turn runs, a turn id. Made once per input; the fields are
    assembled, and the turn id drawn, only when a line is written.
    """

    __slots__ = ("_fields", "_turn", "_turn_id")

    def __init__(self, fields: dict[str, str], turn: bool = False) -> None:
        self._fields = fields
        self._turn = turn
        self._turn_id: str | None = None

    def fields(self) -> dict[str, str]:
        if not self._turn:
            return self._fields
        if self._turn_id is None:
            self._turn_id = new_turn_id()
        return {**self._fields, "turn_id": self._turn_id}


_context: contextvars.ContextVar[Bound | None] = contextvars.ContextVar(
    "slashgate_log_context", default=None
)
Token = contextvars.Token[Bound | None]


def bind(channel: str, conversation: str, message_id: str | None = None) -> Token:
    """Log lines are about this input until ``reset(token)``."""
    fields = {"channel": channel, "conversation": conversation}
    if message_id is not None:
        fields["message_id"] = message_id
    return _context.set(Bound(fields))


def bind_turn() -> Token:
    """Log lines are about the bound input's turn (a new turn id) until ``reset(token)``.
    Tasks started meanwhile keep the same turn id.
    """
    current = _context.get()
    return _context.set(Bound(current._fields if current else {}, turn=True))


# ``reset(token)``: log lines are about what they were before ``bind``/``bind_turn``. The
# context variable's own method: twice per input, no call of this module's around it.
reset = _context.reset


def outside_input() -> contextvars.Context:
    """A context for a task that outlives the input that started it (a conversation's stream
    reader): its lines name the channel and conversation, never that input's message or turn.
    """
    context = contextvars.copy_context()
    current = _context.get()
    kept = {k: v for k, v in current._fields.items() if k != "message_id"} if current else {}
    context.run(_context.set, Bound(kept) if kept else None)
    return context


def fields(**values: str | float) -> dict[str, Any]:
    """``extra=`` for a line with fields of its own: keys of the JSON object, ``key=value``
    after the message in text. Context fields (channel, conversation...) are added anyway.
    """
    return {_OWN: values}


_OWN = "slashgate_fields"  # the record attribute ``fields`` sets


def new_turn_id() -> str:
    return uuid.uuid4().hex[:16]


class Secrets:
    """Masks every configured secret (and its URL-quoted form) in a text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found = {s for s in secrets if len(s) >= MIN_SECRET}
        found |= {quote(s, safe="") for s in found}
        self._secrets = sorted(found, key=len, reverse=True)  # a secret inside another: longest

    def mask(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text


class _Masking(logging.Formatter):
    """Formats, then masks the secrets in the whole line (message, context, traceback)."""

    def __init__(self, secrets: Secrets) -> None:
        super().__init__()
        self.mask = secrets.mask


class TextFormatter(_Masking):
    def format(self, record: logging.LogRecord) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        line = f"{when},{int(record.msecs):03d} {record.levelname} {record.name}: "
        line += record.getMessage()
        line += "".join(f" {k}={v}" for k, v in getattr(record, _OWN, {}).items())
        context = getattr(record, "slashgate", None)
        if context:
            line += " [" + " ".join(f"{k}={v}" for k, v in context.items()) + "]"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return self.mask(line)


class JsonFormatter(_Masking):
    """One JSON object per line: time, level, logger, message, the context fields known, the
    line's own fields, and the traceback as ``exc`` when there is one.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(getattr(record, "slashgate", None) or {})
        entry.update(getattr(record, _OWN, {}))
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return self.mask(json.dumps(entry, ensure_ascii=False))


class _Bare(_Masking):
    def format(self, record: logging.LogRecord) -> str:
        return self.mask(record.getMessage())


class _BadHttp(logging.Filter):
    """aiohttp logs a request it cannot parse (a broken header, a bad chunk) as an error with
    a traceback: the client's fault is one warning line here, rate-limited.
    """

    def __init__(self) -> None:
        super().__init__()
        self.sampler = Sampler()

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError) or not 400 <= (exc.code or 0) < 500:
            return True
        if not self.sampler.allow():
            return False
        record.msg, record.args = (
            "malformed HTTP request: %d %s%s",
            (
                exc.code,
                exc.message,
                self.sampler.held_back(),
            ),
        )
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = None
        return True


# Loggers of ours that third-party libraries log through (slack_sdk's Web API and response_url
# clients, slack_bolt): theirs are library lines, at ``library_log_level``.
LIBRARY_LOGGERS = ("slashgate.slack.web", "slashgate.slack.response_url", "slashgate.slack.bolt")


def library_level(settings: CoreSettings) -> int:
    """The least severe level a library's line needs to be written: ``library_log_level``,
    or ``log_level`` where that is higher.
    """
    return max(
        logging.getLevelName(settings.log_level), logging.getLevelName(settings.library_log_level)
    )


def ours(name: str) -> bool:
    """A logger of the gateway's own (``slashgate.*``), not one a library writes through."""
    own = name == "slashgate" or name.startswith("slashgate.")
    return own and not any(name == n or name.startswith(n + ".") for n in LIBRARY_LOGGERS)


class _Libraries(logging.Filter):
    """Lines of the third-party libraries (aiogram, slack_sdk, slack_bolt, hikari, aiohttp's
    access log...) below ``library_level``: not written. At DEBUG they log message texts,
    request bodies and response URLs.
    """

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level or ours(record.name)


class _Context(logging.Filter):
    """Copies the context fields onto the record (the formatter runs in the same task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        bound = _context.get()
        if bound is not None:
            record.slashgate = bound.fields()
        return True


def secrets_of(settings: CoreSettings) -> list[str]:
    """Every secret value in the settings: tokens, signing secrets, agents' API keys."""
    found: list[str] = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        values = value.values() if isinstance(value, dict) else (value,)
        found += [v.get_secret_value() for v in values if isinstance(v, SecretStr)]
    return found


# Lines for whoever started the process, on stdout: ``slashgate listening on URL``.
ready = logging.getLogger("slashgate.ready")


def configure(settings: CoreSettings, stream: Any = None, out: Any = None) -> None:
    """Root logging for the process: one handler on ``stream`` (stderr), the chosen format;
    and ``ready`` on ``out`` (stdout): a JSON line too in JSON, the bare text in text, which
    scripts wait for (the first screen of ``make run`` ends with the URL).
    """
    secrets = Secrets(secrets_of(settings))
    json_format = settings.log_format == "json"
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(secrets) if json_format else TextFormatter(secrets))
    handler.addFilter(_Libraries(library_level(settings)))
    handler.addFilter(_Context())
    announcer = logging.StreamHandler(out or sys.stdout)
    announcer.setFormatter(JsonFormatter(secrets) if json_format else _Bare(secrets))
    for old in list(ready.handlers):
        ready.removeHandler(old)
    ready.addHandler(announcer)
    ready.propagate = False
    ready.setLevel(logging.INFO)
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, _BadHttp) for f in server_log.filters):
        server_log.addFilter(_BadHttp())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level.upper())


class Sampler:
    """At most ``burst`` lines at once and ``rate`` a second on average (a token bucket):
    bounded output and memory, however many bad requests arrive. ``allow()`` says whether to
    write this line; ``held_back()`` says how many were not, since the last line written.
    """

    def __init__(
        self, rate: float = 1.0, burst: int = 10, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._dropped = 0

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        self._dropped += 1
        return False

    def held_back(self) -> str:
        """`` (N more not logged)``, to end the next line written with; or ""."""
        count, self._dropped = self._dropped, 0
        return f" ({count} more not logged)" if count else ""


# What asyncio's default handler may print of an error's context. Libraries add their own
# keys: hikari puts a Gateway event's whole payload (a user's message text) under "payload".
_CONTEXT_SHOWN = frozenset(
    {"message", "exception", "future", "task", "handle", "protocol", "transport", "socket"}
)


def without_payloads(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """A loop's exception handler: asyncio's own, minus the context keys it does not know,
    so that no message text a library attached reaches the log.
    """
    loop.default_exception_handler({k: v for k, v in context.items() if k in _CONTEXT_SHOWN})
