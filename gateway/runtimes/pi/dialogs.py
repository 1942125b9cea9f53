"""pi's extension dialogs in a chat: confirm and select become permission requests, notify is
shown, and what a chat cannot show (or what comes with no turn to ask in) is answered cancelled.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable

from ...events import PermissionOption, PermissionRequired
from .process import Event, PiStopped
from .turn import PiTurn

Respond = Callable[[str, Event], None]  # pi's dialog id, the answer


class Dialogs:
    def __init__(self, respond: Respond) -> None:
        self._respond = respond
        self._open: dict[str, tuple[str, str, list[str]]] = {}  # ours -> (pi id, method, opts)

    def request(self, event: Event, state: PiTurn | None) -> None:
        """One ``extension_ui_request``, during the turn ``state`` (None: no turn running)."""
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
        self._open[request_id] = (pi_id, str(method), values)
        state.queue.put_nowait(PermissionRequired(request_id, title, tuple(options)))

    def answer(self, request_id: str, option_id: str | None) -> bool:
        """The user's choice (None: cancelled); False when it answers no open dialog."""
        dialog = self._open.get(request_id)
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
        del self._open[request_id]
        self._respond(pi_id, answer)
        return True

    def cancel(self) -> None:
        """Every open dialog answered cancelled: its turn is over."""
        for pi_id, _, _ in self._open.values():
            with contextlib.suppress(PiStopped):
                self._respond(pi_id, {"cancelled": True})
        self._open.clear()
