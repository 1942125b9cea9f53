"""One conversation's pi session: a turn is a ``prompt`` followed until pi is idle again."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator
from functools import partial

from ...events import ErrorEvent, RuntimeEvent, SessionUpdated
from ..base import RuntimeSession, Turn, UpdateListener
from ..kept import KeptSessions
from ..pump import pump
from .dialogs import Dialogs
from .mapping import image, pi_commands, pi_images, pi_message, pi_model
from .pool import PiPool, PiUnavailable
from .process import Event, PiProcess, PiStopped
from .turn import PiTurn

log = logging.getLogger("slashgate.pi")

REQUEST_TIMEOUT = 30.0  # for quick commands (get_state, get_commands)
PI_STOPPED = "pi stopped; it is started again for the next message"


class PiSession(RuntimeSession):
    def __init__(
        self,
        pool: PiPool,
        kept: KeptSessions,
        key: str,
        updates: UpdateListener,
        cancel_grace: float,
    ) -> None:
        self.pool = pool
        self.kept = kept  # conversation -> its pi session file
        self.cancel_grace = cancel_grace  # how long pi has to answer an abort
        self.key = key
        self.process: PiProcess | None = None
        self.session_file: str | None = None  # pi's own session, resumed by a new process
        self._updates = updates
        self._turn: PiTurn | None = None
        self._dialogs = Dialogs(self._respond)

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
        state = PiTurn(self.key)
        self._turn = state
        try:
            try:
                process = await self.pool.acquire(self)
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
            self._dialogs.cancel()
            if self.process is not None:
                self.process.last_used = time.monotonic()

    async def _drive(self, process: PiProcess, turn: Turn, state: PiTurn) -> None:
        """Send the prompt, then follow pi until it is idle; the last event says how it ended."""
        try:
            vision = any(map(image, turn.attachments)) and await self._vision(process)
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
            state.queue.put_nowait(state.ending())
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

    async def _settle(self, process: PiProcess, state: PiTurn) -> None:
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
                await self.kept.set(self.key, self.session_file)
            if (model := pi_model(data)) is not None:
                self._updates(SessionUpdated(current_model=model))
            busy = data.get("isStreaming") or data.get("isCompacting")
            if state.stopped:
                raise PiStopped("pi stopped")
            if not (busy or state.running or state.retrying):
                return
            await state.changed.wait()

    # -- pi's events ----------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """Synchronous, in pi's order."""
        state = self._turn
        if event.get("type") == "extension_ui_request":
            self._dialogs.request(event, state)
        elif state is not None:
            state.follow(event)

    def _respond(self, pi_id: str, answer: Event) -> None:
        if self.process is not None and self.process.alive:
            self.process.send({"type": "extension_ui_response", "id": pi_id, **answer})

    async def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        return self._dialogs.answer(request_id, option_id)

    # -- cancel and lifecycle -------------------------------------------------------------

    async def cancel(self) -> None:
        state = self._turn
        if state is None or self.process is None:
            return
        state.cancelled = True
        self._dialogs.cancel()
        await self._abort(self.process)

    async def _stop(self, process: PiProcess, state: PiTurn) -> None:
        """The turn outlived its reader (its deadline, or a cancel past the grace): abort it,
        unless ``cancel`` already asked (once is enough, and shutdown is waiting).
        """
        if not state.cancelled:
            await self._abort(process)

    async def _abort(self, process: PiProcess) -> None:
        """``abort``: pi answers once it is idle again, or not within the grace."""
        if process.alive:
            with contextlib.suppress(PiStopped, TimeoutError):
                await process.request({"type": "abort"}, self.cancel_grace)

    async def close(self) -> None:
        """Eviction or shutdown: the process goes; the store keeps the pi session file, so
        that a later process (after a restart too) resumes the conversation.
        """
        await self.cancel()
        self.session_file = None
        await self.pool.release(self)

    async def reset(self) -> None:
        """``/new``: the process goes, and the conversation's pi session is forgotten."""
        await self.close()
        await self.kept.set(self.key, None)
