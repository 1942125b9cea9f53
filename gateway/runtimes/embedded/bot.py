"""``Bot``: your own commands on the embedded runtime, with typed handlers.

In the style of aiogram and slack-bolt: decorate an async function per command, and one for
plain text; each gets a ``Context`` with the parsed input and streams its reply through it.
A ``Bot`` is a runtime, so ``runtime = "package.module:bot"`` in the settings serves it;
``slashgate.Bot`` adds ``run()``, which serves it from a script.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from contract import STRICT_NAME, Command, utf16_prefix

from ..workspace import inside
from .entity import EntityDefinition, HandlerContext, HandlerError, InboxWake
from .runtime import EmbeddedRuntime

# A conversation's state, as the bot keeps it: each entry made on first use, so that a
# conversation whose handlers keep nothing has nothing to save.
DATA = "data"  # the handlers' own (``ctx.state``)
HANDLERS = "handlers"  # command -> its handler, added by ``ctx.add_command``
HANDLER_REFS = "handler_refs"  # command -> "module:qualname" of its handler
NO_TEXT_HANDLER = "this bot answers slash commands only: send /help to list them"
_SPACE = re.compile(r"\s*")  # white space as str.strip sees it


@dataclass(frozen=True, slots=True)
class Reference:
    """An ``@file:``, ``@branch:`` or ``@symbol:`` reference in the input."""

    kind: Literal["file", "branch", "symbol"]
    value: str  # the path or the name
    raw: str  # as typed: ``@file:src/app.py``


class _AddsCommands:
    """``add_command``, the same for the bot's commands and a conversation's own."""

    __slots__ = ()

    def add_command(
        self,
        name: str,
        handler: CommandHandler,
        *,
        description: str = "",
        hint: str | None = None,
    ) -> None:
        """Register ``/name``, answered by ``handler``. ``bot.add_command``: for every
        conversation opened from now on (ValueError when it is registered already).
        ``ctx.add_command``: for this conversation only, replacing one of that name; menus
        follow, and with a durable store it outlives a restart when ``handler`` is a
        module-level function (a closure cannot be found again: its command is gone after
        a restart).
        """
        self._add(_command(name, description, hint), handler)

    def _add(self, command: Command, handler: CommandHandler) -> None:
        raise NotImplementedError


@dataclass(slots=True)
class Context(_AddsCommands):
    """One input to a handler: what was typed, by whom, where; ``reply`` streams the answer."""

    command: str | None  # the leading command's name; None for plain text
    args: str  # the text after the command, stripped ("" for plain text)
    text: str  # the whole input as typed
    user: str | None
    conversation: str  # "<channel>:<conversation id>", e.g. "telegram:42"
    files: tuple[dict[str, Any], ...]  # compositor file-attachment parts (docs/attachments.md)
    _inner: HandlerContext = field(repr=False)
    _references: tuple[Reference, ...] | None = field(default=None, repr=False)

    @property
    def references(self) -> tuple[Reference, ...]:
        """The ``@file:``, ``@branch:`` and ``@symbol:`` references, in order. Found when
        first asked for: a long input can hold thousands, most handlers never look.
        """
        if self._references is None:
            wake = self._inner.wake
            assert isinstance(wake, InboxWake)  # a Context is made for an input only
            self._references = references(wake.message.payload)
        return self._references

    @property
    def state(self) -> dict[str, Any]:
        """This conversation's, kept between its inputs."""
        data: dict[str, Any] = self._inner.state.setdefault(DATA, {})
        return data

    def reply(self, text: str) -> Awaitable[None]:
        """``await ctx.reply(text)``: add ``text`` to the reply; channels show it as it
        streams. Markdown.
        """
        return self._inner.reply(text)

    def _add(self, command: Command, handler: CommandHandler) -> None:
        self._inner.state.setdefault(HANDLERS, {})[command.name] = handler
        refs: dict[str, str] = self._inner.state.setdefault(HANDLER_REFS, {})
        ref = _reference(handler)
        if ref is None:
            refs.pop(command.name, None)
        else:
            refs[command.name] = ref
        self._inner.slash_commands.register(command)

    def remove_command(self, name: str) -> bool:
        """Remove a command added by ``add_command``; False when there was none."""
        self._inner.state.get(HANDLERS, {}).pop(name, None)
        self._inner.state.get(HANDLER_REFS, {}).pop(name, None)
        return self._inner.slash_commands.unregister(name)


CommandHandler = Callable[[Context], Awaitable[None]]


class Bot(EmbeddedRuntime, _AddsCommands):
    """Your commands, served by the gateway on every channel.

    ``@bot.command("deploy", description=..., hint=...)`` registers a command handler,
    ``@bot.text`` the handler of plain text. A handler fails the turn with ``HandlerError``:
    the user gets the contract's failure text with its message.
    """

    def __init__(self, name: str = "bot", description: str = "") -> None:
        super().__init__(
            EntityDefinition(type=name, handler=self._dispatch, description=description)
        )
        self._handlers: dict[str, CommandHandler] = {}
        self._text: CommandHandler | None = None

    def command(
        self, name: str, *, description: str = "", hint: str | None = None
    ) -> Callable[[CommandHandler], CommandHandler]:
        """Decorator: ``handler`` runs ``/name``."""

        def register(handler: CommandHandler) -> CommandHandler:
            self.add_command(name, handler, description=description, hint=hint)
            return handler

        return register

    def text(self, handler: CommandHandler) -> CommandHandler:
        """Decorator: ``handler`` answers input that is not a command."""
        self._text = handler
        return handler

    def _add(self, command: Command, handler: CommandHandler) -> None:
        if command.name in self._handlers:
            raise ValueError(f"/{command.name} is already registered")
        self._handlers[command.name] = handler
        self._publish_static((*self.definition.slash_commands, command))

    def remove_command(self, name: str) -> bool:
        """Unregister ``/name`` for conversations opened from now on."""
        if self._handlers.pop(name, None) is None:
            return False
        self._publish_static(tuple(c for c in self.definition.slash_commands if c.name != name))
        return True

    def _publish_static(self, commands: tuple[Command, ...]) -> None:
        self.definition = replace(self.definition, slash_commands=commands)

    async def _dispatch(self, inner: HandlerContext) -> None:
        wake = inner.wake
        if not isinstance(wake, InboxWake) or wake.message.message_type != "composer_input":
            return  # spawn and schedule wakes: nothing to do for a bot
        payload = wake.message.payload  # as the runtime validated it
        name, args = leading_command(payload)
        ctx = Context(
            command=name,
            args=args,
            text=payload["source"],
            user=wake.message.sender,
            conversation=inner.conversation,
            files=tuple(payload.get("attachments") or ()),
            _inner=inner,
        )
        if name is None:
            if self._text is None:
                raise HandlerError(NO_TEXT_HANDLER, "unsupported")
            await self._text(ctx)
            return
        own: dict[str, CommandHandler] | None = inner.state.get(HANDLERS)
        handler = own.get(name) if own else None
        if handler is None:
            handler = self._handlers.get(name)
        if handler is None:  # a command this conversation added before a restart
            handler = _resolve(inner.state.get(HANDLER_REFS, {}).get(name))
        if handler is None:  # the contract forwards known commands only; a race with remove
            raise HandlerError(f"unknown command /{name}", "unsupported")
        await handler(ctx)


def _reference(handler: CommandHandler) -> str | None:
    """``module:qualname`` of a handler that can be imported again, else None."""
    module, qualname = getattr(handler, "__module__", None), getattr(handler, "__qualname__", "")
    if not module or not qualname or "<locals>" in qualname or module == "__main__":
        return None
    return f"{module}:{qualname}"


def _resolve(ref: str | None) -> CommandHandler | None:
    if not ref:
        return None
    module, _, qualname = ref.partition(":")
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return found if callable(found) else None


def _command(name: str, description: str, hint: str | None) -> Command:
    if not STRICT_NAME.fullmatch(name):
        raise ValueError(
            f"command name {name!r}: lower-case letters and digits, words joined by '-'"
        )
    return Command(name=name, description=description, hint=hint)


# The payload is the composer_input JSON a handler gets (``wake.message.payload``), nodes as
# the RFC writes them: read as they are, not parsed into models again.


def leading_command(payload: dict[str, Any]) -> tuple[str | None, str]:
    """(command name, argument text) when the input starts with a command; else (None, "")."""
    for node in payload.get("nodes") or ():
        kind = node["kind"]
        if kind == "slash_command":
            source: str = payload["source"]
            end = utf16_prefix(source, node["end"])  # UTF-16 units, as code points
            # ``source[end:].strip()`` in one copy: a long message's rest is megabytes.
            start = _SPACE.match(source, end).end()  # type: ignore[union-attr]
            return node["name"], source[start:].rstrip()
        if kind != "text" or node["raw"].strip():
            break
    return None, ""


def references(payload: dict[str, Any]) -> tuple[Reference, ...]:
    """The references of an input; a file path that leaves the folder (``~``, absolute, a
    ``..`` too many) is no reference but text (gateway/runtimes/workspace.py).
    """
    found: list[Reference] = []
    for node in payload.get("nodes") or ():
        kind = node["kind"]
        if kind == "file" and inside(node["path"], None):
            found.append(Reference("file", node["path"], node["raw"]))
        elif kind in ("branch", "symbol"):
            found.append(Reference(kind, node["name"], node["raw"]))
    return tuple(found)
