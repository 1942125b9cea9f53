"""Permission requests from the runtime, answered in the room: Matrix has no buttons, so the
prompt numbers the options, the bot puts each number under it as a reaction (one tap), and a
reply with the number answers too (clients without reactions, options past ten). Only the
person whose input raised the request can answer; others' reactions and numbers are not
answers, nor is a number its person says to someone else (a reply to another message, or one
that mentions others and not the bot). A number the prompt has no option for gets a word on
which ones answer it. The prompt is edited to say what was chosen.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from mautrix.errors import MatrixError

from gateway.api import GatewayAPI, PermissionRequired
from gateway.store import BoundedTTLMap

from .outbox import Outbox, Target
from .render import render

log = logging.getLogger("slashgate.matrix")

KEYCAPS = (*(f"{n}\ufe0f\u20e3" for n in range(1, 10)), "🔟")
STALE = "This request is no longer pending."
MAX_TITLE = 3000
PENDING_FOR = 24 * 3600.0  # seconds a prompt can be answered
# A number as typed: ASCII digits only, as "²" or "①" are str.isdigit() but no int().
_NUMBER = re.compile(r"\s*([0-9]{1,3})\.?\s*")


@dataclass(frozen=True, slots=True)
class _Pending:
    target: Target
    user: str
    request: PermissionRequired
    prompt: str  # its Markdown


def prompt_markdown(request: PermissionRequired) -> str:
    lines = [f"🔐 **Permission needed**  \n{request.title[:MAX_TITLE]}", ""]
    lines += [f"{i}. {o.name or o.option_id}" for i, o in enumerate(request.options, start=1)]
    lines += ["", "React with the number, or answer with it."]
    return "\n".join(lines)


class Permissions:
    def __init__(self, outbox: Outbox, gateway: GatewayAPI, channel: str, size: int = 1_000):
        self.outbox = outbox
        self.gateway = gateway
        self.channel = channel
        self._pending: BoundedTTLMap[_Pending] = BoundedTTLMap(size, PENDING_FOR)
        # (room, user) -> the prompt a bare number answers: the latest one asked there.
        self._latest: BoundedTTLMap[str] = BoundedTTLMap(size, PENDING_FOR)

    async def ask(self, target: Target, user: str, request: PermissionRequired) -> None:
        markdown = prompt_markdown(request)
        room = target.room_id
        try:
            prompt = await self.outbox.notice(room, render(markdown)[0], target.relation())
        except (MatrixError, OSError) as exc:  # tried again already; the turn waits in vain
            log.error("permission prompt in room %s not shown: %s", room, exc)
            return
        self._pending.set(prompt, _Pending(target, user, request, markdown))
        self._latest.set(f"{room}\n{user}", prompt)
        for key in KEYCAPS[: len(request.options)]:
            try:
                await self.outbox.react(room, prompt, key)
            except (MatrixError, OSError) as exc:  # the numbers still answer
                log.warning("option reaction not shown: %s", exc)
                break

    def pending(self, room: str, user: str) -> bool:
        """Whether a prompt waits for ``user``'s answer in ``room``."""
        return self._latest.get(f"{room}\n{user}") is not None

    @staticmethod
    def number(text: str) -> int | None:
        """The number a message is (``2``, ``2.``); None when it is any other text."""
        match = _NUMBER.fullmatch(text)
        return None if match is None else int(match.group(1))

    def answered(self, room: str, user: str, replying_to: str | None, aside: bool) -> str | None:
        """The prompt a number of ``user`` answers: the one it replies to, else (unless it is
        said ``aside``, to someone else) the latest one asked of them in the room.
        """
        replied = None if replying_to is None else self._pending.get(replying_to)
        if replied is not None and replied.user == user and replied.target.room_id == room:
            return replying_to
        return None if aside else self._latest.get(f"{room}\n{user}")

    async def reacted(self, room: str, user: str, prompt: str, key: str) -> bool:
        """A reaction: True when it answered a pending prompt."""
        if key not in KEYCAPS:
            return False
        return await self._answer(room, user, prompt, KEYCAPS.index(key))

    async def numbered(self, user: str, number: int, prompt: str, said: Target) -> None:
        """A number ``user`` said (``said``: their message) to ``prompt``: its answer, or,
        when the prompt has no such option, a notice of those it has.
        """
        pending = self._pending.get(prompt)
        if pending is None:  # answered meanwhile
            return
        options = len(pending.request.options)
        if 0 < number <= options:
            await self._answer(said.room_id, user, prompt, number - 1)
            return
        text = f"Answer the permission request with a number from 1 to {options}."
        try:
            await self.outbox.notice(said.room_id, render(text)[0], said.relation())
        except (MatrixError, OSError) as exc:
            log.warning("the notice of a number out of range was not sent: %s", exc)

    async def _answer(self, room: str, user: str, prompt: str, index: int) -> bool:
        pending = self._pending.get(prompt)
        if pending is None or pending.user != user or pending.target.room_id != room:
            return False
        if not 0 <= index < len(pending.request.options):
            return False
        self._pending.pop(prompt)
        if self._latest.get(f"{room}\n{user}") == prompt:
            self._latest.pop(f"{room}\n{user}")
        option = pending.request.options[index]
        answered = await self.gateway.answer_permission(
            self.channel, pending.target.conversation, pending.request.request_id, option.option_id
        )
        outcome = f"→ {option.name or option.option_id}" if answered else STALE
        try:
            await self.outbox.edit(room, prompt, render(f"{pending.prompt}\n\n{outcome}")[0])
        except (MatrixError, OSError) as exc:
            log.warning("permission prompt not updated: %s", exc)
        return True
