"""One conversation's pi session: a turn is a ``prompt`` followed until pi is idle again."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from contract import Command

from ...attachments import descriptors
from ...events import (
    ErrorEvent,
    MessageDelta,
    MessageEnd,
    PermissionOption,
    PermissionRequired,
    ReasoningDelta,
    RuntimeEvent,
    SessionUpdated,
    StatusChanged,
    ToolEnd,
    ToolRunning,
    ToolStart,
    UsageReported,
)
from ...inbound import Attachment
from ..base import RuntimeSession, Turn, UpdateListener
from ..pump import EventQueue, pump
from .process import Event, PiProcess, PiStopped

if TYPE_CHECKING:
    from .runtime import PiRuntime

log = logging.getLogger("slashgate.pi")

REQUEST_TIMEOUT = 30.0  # for quick commands (get_state, get_commands)
PI_STOPPED = "pi stopped; it is started again for the next message"
_STOP_REASONS = {"aborted": "cancelled", "length": "max_tokens"}


class PiUnavailable(Exception):
    """No pi process for this conversation: every one the pool allows is running a turn."""


@dataclass
class _Turn:
    """What the events of one turn tell: pi is idle again when none of these is pending."""

    queue: EventQueue = field(default_factory=asyncio.Queue)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    running: bool = False  # between agent_start and agent_end
    retrying: bool = False  # between auto_retry_start and the retry's start (or its end)
    cancelled: bool = False
    text: bool = False  # some reply text was shown
    last: dict[str, Any] | None = None  # the last assistant message of the last run
    error: str | None = None  # an extension error, or a retry's final failure
    stopped: bool = False  # the process exited

    def show(self, text: str) -> None:
        if text:
            self.queue.put_nowait(MessageDelta(text))
            self.text = True


def pi_message(turn: Turn, vision: bool) -> str:
    """The prompt text. A command goes by its canonical name: pi matches names case-sensitively
    and sends anything it does not know to the model. Files that do not go as images follow
    as descriptors (pi's prompt takes images only).
    """
    if turn.command is not None:
        text = f"/{turn.command} {turn.args}".rstrip()
    else:
        text = turn.message.payload.source
    others = [a for a in turn.attachments if not (vision and _image(a))]
    return "\n\n".join(t for t in (text, descriptors(others)) if t)


def pi_images(turn: Turn, vision: bool) -> list[dict[str, str]]:
    """The turn's images in pi's ``ImageContent`` shape; none for a model without vision."""
    if not vision:
        return []
    return [
        {
            "type": "image",
            "data": base64.b64encode(a.data).decode("ascii"),
            "mimeType": a.media_type,
        }
        for a in turn.attachments
        if a.data is not None and _image(a)
    ]


def _image(item: Attachment) -> bool:
    return item.data is not None and item.media_type.startswith("image/")


def pi_commands(data: Any) -> tuple[Command, ...]:
    """``get_commands``: extension commands, prompt templates and skills (``skill:`` kept)."""
    entries = data.get("commands", []) if isinstance(data, dict) else []
    return tuple(
        Command(name=c["name"], description=c.get("description") or "")
        for c in entries
        if isinstance(c, dict) and isinstance(c.get("name"), str) and c["name"]
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def pi_usage(message: dict[str, Any] | None) -> UsageReported | None:
    """An assistant message's ``usage`` (tokens, ``cost.total``); None when it has none. pi
    writes zeros for what the provider did not report: zero is "not reported" here.
    """
    data = (message or {}).get("usage")
    if not isinstance(data, dict):
        return None

    def number(value: Any) -> int | None:
        return int(value) if isinstance(value, int | float) and value > 0 else None

    cost = data.get("cost")
    total_cost = cost.get("total") if isinstance(cost, dict) else None
    usage = UsageReported(
        input_tokens=number(data.get("input")),
        output_tokens=number(data.get("output")),
        total_tokens=number(data.get("totalTokens")),
        cost=float(total_cost) if isinstance(total_cost, int | float) and total_cost > 0 else None,
    )
    return None if usage == UsageReported() else usage


def pi_model(state: dict[str, Any]) -> str | None:
    """``get_state``'s model as ``provider/id``."""
    model = state.get("model")
    if not isinstance(model, dict) or not isinstance(model.get("id"), str):
        return None
    provider = model.get("provider")
    return f"{provider}/{model['id']}" if isinstance(provider, str) else model["id"]


def _last_assistant(messages: Any) -> dict[str, Any] | None:
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            return message
    return None


class PiSession(RuntimeSession):
    def __init__(self, runtime: PiRuntime, key: str, updates: UpdateListener) -> None:
        self.runtime = runtime
        self.key = key
        self.process: PiProcess | None = None
        self.session_file: str | None = None  # pi's own session, resumed by a new process
        self._updates = updates
        self._turn: _Turn | None = None
        self._dialogs: dict[str, tuple[str, str, list[str]]] = {}  # ours -> (pi id, method, opts)

    @property
    def busy(self) -> bool:
        return self._turn is not None

    # -- the process ----------------------------------------------------------------------

    async def attach(self, process: PiProcess) -> None:
        """A fresh process for this conversation: resume its pi session, report its commands."""
        process.listener = self._on_event
        self.process = process
        if self.session_file:
            await process.request(
                {"type": "switch_session", "sessionPath": self.session_file}, REQUEST_TIMEOUT
            )
        await self.refresh_commands()

    async def refresh_commands(self) -> None:
        if self.process is None:
            return
        response = await self.process.request({"type": "get_commands"}, REQUEST_TIMEOUT)
        if response.get("success"):
            commands = pi_commands(response.get("data"))
            self._updates(
                SessionUpdated(commands=commands, capabilities={"supports_commands": True})
            )

    # -- turns ----------------------------------------------------------------------------

    async def run(self, turn: Turn) -> AsyncIterator[RuntimeEvent]:
        state = _Turn()
        self._turn = state
        try:
            try:
                process = await self.runtime.acquire(self)
            except PiUnavailable as exc:
                yield ErrorEvent("busy", str(exc))
                return
            except Exception as exc:
                log.warning("could not start pi for %s: %s", self.key, exc)
                yield ErrorEvent("generic", f"could not start pi ({exc})")
                return
            events = pump(
                state.queue,
                partial(self._drive, process, turn, state),
                partial(self._stop, process, state),
            )
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event
        finally:
            self._turn = None
            self._cancel_dialogs()
            if self.process is not None:
                self.process.last_used = time.monotonic()

    async def _drive(self, process: PiProcess, turn: Turn, state: _Turn) -> None:
        """Send the prompt, then follow pi until it is idle; the last event says how it ended."""
        try:
            vision = any(map(_image, turn.attachments)) and await self._vision(process)
            command: Event = {"type": "prompt", "message": pi_message(turn, vision)}
            if images := pi_images(turn, vision):
                command["images"] = images
            response = await process.request(command)
            if not response.get("success"):
                error = str(response.get("error") or "pi refused the prompt")
                state.queue.put_nowait(ErrorEvent.from_text(error))
                return
            await self._settle(process, state)
            with contextlib.suppress(Exception):
                await self.refresh_commands()  # /reload and extensions may change them
            state.queue.put_nowait(self._ending(state))
        except PiStopped:
            state.queue.put_nowait(ErrorEvent("generic", PI_STOPPED))
        except Exception as exc:
            log.exception("pi turn failed in %s", self.key)
            state.queue.put_nowait(ErrorEvent.from_text(str(exc) or type(exc).__name__))

    async def _vision(self, process: PiProcess) -> bool:
        """Whether pi's current model reads images (its ``input`` lists ``image``): for any
        other, pi would replace each image by a bare placeholder; the gateway sends the
        descriptor instead, which names the file.
        """
        reply = await process.request({"type": "get_state"}, REQUEST_TIMEOUT)
        data = reply.get("data")
        model = data.get("model") if isinstance(data, dict) else None
        inputs = model.get("input") if isinstance(model, dict) else None
        return isinstance(inputs, list) and "image" in inputs

    async def _settle(self, process: PiProcess, state: _Turn) -> None:
        """Wait until pi is idle: no run, retry or compaction pending. ``get_state`` doubles as
        a barrier: what pi wrote before answering it (an auto_retry_start right after an
        agent_end, say) has been read by then.
        """
        while True:
            state.changed.clear()
            reply = await process.request({"type": "get_state"}, REQUEST_TIMEOUT)
            data = reply.get("data") if isinstance(reply.get("data"), dict) else {}
            assert isinstance(data, dict)
            if (
                isinstance(data.get("sessionFile"), str)
                and data["sessionFile"] != self.session_file
            ):
                self.session_file = data["sessionFile"]
                await self.runtime.kept.set(self.key, self.session_file)
            if (model := pi_model(data)) is not None:
                self._updates(SessionUpdated(current_model=model))
            busy = data.get("isStreaming") or data.get("isCompacting")
            if state.stopped:
                raise PiStopped("pi stopped")
            if not (busy or state.running or state.retrying):
                return
            await state.changed.wait()

    def _ending(self, state: _Turn) -> RuntimeEvent:
        last = state.last or {}
        reason = last.get("stopReason")
        if state.cancelled or reason == "aborted":
            return MessageEnd("cancelled")
        if reason == "error" or (state.error and not state.text):
            return ErrorEvent.from_text(str(last.get("errorMessage") or state.error or "pi failed"))
        return MessageEnd(_STOP_REASONS.get(str(reason), "end_turn"))

    # -- pi's events ----------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """Synchronous, in pi's order."""
        state = self._turn
        kind = event.get("type")
        if kind == "extension_ui_request":
            self._ui_request(event, state)
            return
        if state is None:
            return
        if kind == "process_exit":
            state.stopped = True
        elif kind == "agent_start":
            state.running, state.retrying = True, False
        elif kind == "agent_end":
            state.running = False
            state.last = _last_assistant(event.get("messages"))
            if (spent := pi_usage(state.last)) is not None:
                state.queue.put_nowait(spent)
        elif kind == "message_update":
            delta = event.get("assistantMessageEvent") or {}
            if delta.get("type") == "text_delta":
                state.show(str(delta.get("delta", "")))
            elif delta.get("type") == "thinking_delta" and delta.get("delta"):
                state.queue.put_nowait(ReasoningDelta(str(delta["delta"])))
            return
        elif kind == "message_end":
            message = event.get("message") or {}
            if message.get("role") == "custom" and message.get("display"):
                state.show(_text(message.get("content")))  # an extension's message to the user
            return
        elif kind == "tool_execution_start":
            title = str(event.get("toolName", "tool"))
            state.queue.put_nowait(ToolStart(str(event.get("toolCallId")), title))
            return
        elif kind == "tool_execution_update":
            state.queue.put_nowait(ToolRunning(str(event.get("toolCallId")), event.get("toolName")))
            return
        elif kind == "tool_execution_end":
            result = event.get("result") or {}
            output = _text(result.get("content") if isinstance(result, dict) else None) or None
            tool_id = str(event.get("toolCallId"))
            failed = bool(event.get("isError"))
            state.queue.put_nowait(ToolEnd(tool_id, "failed" if failed else "completed", output))
            return
        elif kind == "auto_retry_start":
            state.retrying = True
            detail = f"attempt {event.get('attempt')} of {event.get('maxAttempts')}"
            state.queue.put_nowait(StatusChanged("retrying", detail))
        elif kind == "auto_retry_end":
            state.retrying = False
            if not event.get("success"):
                state.error = str(event.get("finalError") or "pi gave up retrying")
        elif kind == "extension_error":
            state.error = str(event.get("error") or "an extension failed")
            log.warning("pi extension error in %s: %s", self.key, state.error)
        elif kind != "compaction_end":
            return
        state.changed.set()

    def _ui_request(self, event: Event, state: _Turn | None) -> None:
        """Extension dialogs: confirm/select become permission requests; notify is shown."""
        method = event.get("method")
        pi_id = str(event.get("id"))
        if method == "notify":
            if state is not None:
                state.show(("\n" if state.text else "") + str(event.get("message", "")))
            return
        if method not in ("confirm", "select", "input", "editor"):
            return  # status lines, widgets, titles: nothing a chat shows
        if state is None or method in ("input", "editor"):
            self._respond(pi_id, {"cancelled": True})
            return
        title = str(event.get("title") or "pi asks")
        if method == "confirm":
            if event.get("message"):
                title = f"{title}\n{event['message']}"
            options = [
                PermissionOption("yes", "Yes", "allow_once"),
                PermissionOption("no", "No", "reject_once"),
            ]
            values: list[str] = []
        else:
            values = [str(o) for o in event.get("options") or []]
            options = [PermissionOption(str(i), v, "allow_once") for i, v in enumerate(values)]
        request_id = uuid.uuid4().hex[:16]
        self._dialogs[request_id] = (pi_id, str(method), values)
        state.queue.put_nowait(PermissionRequired(request_id, title, tuple(options)))

    def _respond(self, pi_id: str, answer: Event) -> None:
        if self.process is not None and self.process.alive:
            self.process.send({"type": "extension_ui_response", "id": pi_id, **answer})

    async def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        dialog = self._dialogs.get(request_id)
        if dialog is None:
            return False
        pi_id, method, values = dialog
        if option_id is None:
            answer: Event = {"cancelled": True}
        elif method == "confirm" and option_id in ("yes", "no"):
            answer = {"confirmed": option_id == "yes"}
        elif method == "select" and option_id.isdigit() and int(option_id) < len(values):
            answer = {"value": values[int(option_id)]}
        else:
            return False
        del self._dialogs[request_id]
        self._respond(pi_id, answer)
        return True

    def _cancel_dialogs(self) -> None:
        for pi_id, _, _ in self._dialogs.values():
            with contextlib.suppress(PiStopped):
                self._respond(pi_id, {"cancelled": True})
        self._dialogs.clear()

    # -- cancel and lifecycle -------------------------------------------------------------

    async def cancel(self) -> None:
        state = self._turn
        if state is None or self.process is None:
            return
        state.cancelled = True
        self._cancel_dialogs()
        await self._abort(self.process)

    async def _stop(self, process: PiProcess, state: _Turn) -> None:
        """The turn outlived its reader (its deadline, or a cancel past the grace): abort it,
        unless ``cancel`` already asked (once is enough, and shutdown is waiting).
        """
        if not state.cancelled:
            await self._abort(process)

    async def _abort(self, process: PiProcess) -> None:
        """``abort``: pi answers once it is idle again, or not within the grace."""
        if process.alive:
            with contextlib.suppress(PiStopped, TimeoutError):
                await process.request({"type": "abort"}, self.runtime.cancel_grace)

    async def close(self) -> None:
        """Eviction or shutdown: the process goes; the store keeps the pi session file, so
        that a later process (after a restart too) resumes the conversation.
        """
        await self.cancel()
        self.session_file = None
        await self.runtime.release(self)

    async def reset(self) -> None:
        """``/new``: the process goes, and the conversation's pi session is forgotten."""
        await self.close()
        await self.runtime.kept.set(self.key, None)
