"""What the operator approved at run time, per channel (``slashgate access``, ``/pair``): the
members (users and groups, each with a role) and the pairing requests. Kept in the state
store under ``access:<channel>`` as one JSON value, changed only under the store's lease of
the same name, so that replicas and CLI runs acting at once leave one record each.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["owner", "allowed"]
NoCode = Literal["pairing_waiting", "pairing_full"]
# Pairing codes: no 0/O or 1/I to misread.
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_TTL = 3600.0  # seconds a code may be approved
MAX_WAITING = 3  # requests waiting per channel; more strangers get no code
KEPT_FOR = 86400.0  # an expired or approved code is remembered this long, to say so


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(code: str) -> str:
    return code.strip().upper().replace("-", "").replace(" ", "")


@dataclass(slots=True)
class Book:
    members: dict[str, Role] = field(default_factory=dict)
    # code -> {"sender", "conversation", "expires", "approved": bool}
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, value: Any) -> Book:
        if not isinstance(value, dict):
            return cls()
        return cls(dict(value.get("members", {})), dict(value.get("requests", {})))

    def dump(self) -> dict[str, Any]:
        return {"members": self.members, "requests": self.requests}

    def role(self, id_: str) -> Role | None:
        return self.members.get(id_)

    def has_owner(self) -> bool:
        return "owner" in self.members.values()

    def waiting(self, now: float) -> dict[str, dict[str, Any]]:
        """The requests that may still be approved."""
        return {
            code: r
            for code, r in self.requests.items()
            if not r.get("approved") and r["expires"] > now
        }

    def prune(self, now: float) -> None:
        self.requests = {
            code: r for code, r in self.requests.items() if r["expires"] + KEPT_FOR > now
        }

    def no_code(self, sender: str, now: float) -> NoCode | None:
        """Why ``sender`` gets no new pairing code now: one of theirs waits already, or
        ``MAX_WAITING`` requests do; None when they may have one.
        """
        waiting = self.waiting(now)
        if any(r["sender"] == sender for r in waiting.values()):
            return "pairing_waiting"
        return "pairing_full" if len(waiting) >= MAX_WAITING else None

    def request(self, sender: str, conversation: str, now: float) -> str | None:
        """A new pairing code for ``sender``; None when ``no_code`` says why not."""
        self.prune(now)
        if self.no_code(sender, now) is not None:
            return None
        code = new_code()
        while code in self.requests:
            code = new_code()
        self.requests[code] = {
            "sender": sender,
            "conversation": conversation,
            "expires": now + CODE_TTL,
            "approved": False,
        }
        return code

    def approve(self, code: str, now: float, owned: bool) -> tuple[str, str | None]:
        """Approve a pairing code: (what happened, the sender). What happened is "owner" (the
        channel had none: the first approved sender becomes its owner), "allowed",
        "already" (approved before: harmless), "expired" or "unknown".
        """
        request = self.requests.get(normal_code(code))
        if request is None:
            return "unknown", None
        sender = str(request["sender"])
        if request.get("approved") or sender in self.members:
            request["approved"] = True
            return "already", sender
        if request["expires"] <= now:
            return "expired", None
        request["approved"] = True
        self.members[sender] = "allowed" if owned else "owner"
        return self.members[sender], sender

    def allow(self, id_: str, role: Role) -> bool:
        """Add or change a member; False when it was so already."""
        if self.members.get(id_) == role:
            return False
        self.members[id_] = role
        return True

    def revoke(self, id_: str) -> bool:
        return self.members.pop(id_, None) is not None
