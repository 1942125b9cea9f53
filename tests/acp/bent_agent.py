"""An ACP agent that bends the protocol as claude-agent-acp 0.23 does, standard library only, so
that every byte it sends is chosen here (the SDK would not send ``used: null``).

JSON-RPC over stdio, one object a line. ``initialize`` (no ``session/load``, no
``session/close``), ``session/new`` (``bent-1``, ``bent-2``, ...), ``session/cancel`` and
``session/prompt``:
- ``hold``: the chunk ``working``, then no answer until ``session/cancel`` (``cancelled``);
- the first prompt after a cancelled one: ``end_turn`` at once, without a word; the one after
  that (the gateway's retry) is never answered, unless cancelled;
- anything else: ``echo: <text>``, a ``usage_update`` with ``used: null`` (its ``size`` and
  ``cost`` fine), an update of a kind no protocol version has, then ``end_turn``.
With ``BENT_RECORD=<file>`` it appends a line per request there (``new bent-1``,
``prompt bent-1 hold``, ``cancel bent-1``).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

RECORD = os.environ.get("BENT_RECORD")


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(request_id: Any, result: dict[str, Any]) -> None:
    send({"id": request_id, "result": result})


def update(session: str, body: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": session, "update": body}})


def record(line: str) -> None:
    if RECORD:
        with open(RECORD, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


class Bent:
    def __init__(self) -> None:
        self.sessions = 0
        self.held: dict[str, Any] = {}  # session -> the id of the prompt left unanswered
        self.after_cancel: dict[str, int] = {}  # session -> prompts since its cancel

    def handle(self, method: str, request_id: Any, params: dict[str, Any]) -> None:
        if method == "initialize":
            answer(request_id, {"protocolVersion": 1, "agentCapabilities": {}})
        elif method == "session/new":
            self.sessions += 1
            session = f"bent-{self.sessions}"
            record(f"new {session}")
            answer(request_id, {"sessionId": session})
        elif method == "session/cancel":
            session = params["sessionId"]
            record(f"cancel {session}")
            self.after_cancel[session] = 0
            if (held := self.held.pop(session, None)) is not None:
                answer(held, {"stopReason": "cancelled"})
        elif method == "session/prompt":
            self.prompt(request_id, params["sessionId"], params["prompt"])
        elif request_id is not None:
            send({"id": request_id, "error": {"code": -32601, "message": f"no {method}"}})

    def prompt(self, request_id: Any, session: str, blocks: list[dict[str, Any]]) -> None:
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        record(f"prompt {session} {text}")
        since = self.after_cancel.get(session)
        if since is not None:
            self.after_cancel[session] = since + 1
            if since == 0:
                answer(request_id, {"stopReason": "end_turn"})
                return
            if since == 1:
                self.held[session] = request_id  # the retry: never answered
                return
        if text == "hold":
            update(session, chunk("working"))
            self.held[session] = request_id
            return
        update(session, chunk(f"echo: {text}"))
        cost = {"amount": 0.01, "currency": "USD"}
        update(
            session, {"sessionUpdate": "usage_update", "used": None, "size": 200000, "cost": cost}
        )
        update(session, {"sessionUpdate": "mystery_update", "what": 1})
        answer(request_id, {"stopReason": "end_turn"})


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def main() -> None:
    agent = Bent()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "method" in message:
            agent.handle(message["method"], message.get("id"), message.get("params") or {})


if __name__ == "__main__":
    main()
