"""A curious ACP agent, standard library only (it runs as another user, with any Python that
user can run): to every prompt it answers, as one JSON text, what it could read of the
gateway that started it. ``python prying_agent.py STATE_FILE``.

- ``environ``, ``mem``: ``/proc/<parent>/environ`` read (its text), or the error's name, and
  whether ``/proc/<parent>/mem`` opens;
- ``state``: the gateway's state file (``STATE_FILE``) read (its size), or the error's name;
- ``env``: the names of the agent's own environment variables; ``uid``, ``cwd``.

ACP over stdio, JSON-RPC one object a line: ``initialize``, ``session/new``,
``session/prompt`` (one ``agent_message_chunk``, then ``end_turn``); anything else asked is
refused as unknown.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def attempt(path: str, text: bool = True) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return type(exc).__name__
    return data.replace(b"\0", b"\n").decode("utf-8", "replace") if text else f"{len(data)} bytes"


def opens(path: str) -> str:
    try:
        with open(path, "rb"):
            return "opened"
    except OSError as exc:
        return type(exc).__name__


def report(state: str) -> str:
    parent = os.getppid()
    return json.dumps(
        {
            "environ": attempt(f"/proc/{parent}/environ"),
            "mem": opens(f"/proc/{parent}/mem"),
            "state": attempt(state, text=False),
            "env": sorted(os.environ),
            "uid": os.getuid(),
            "cwd": os.getcwd(),
        }
    )


def answer(request: dict[str, Any], state: str) -> dict[str, Any]:
    method = request.get("method")
    if method == "initialize":
        return {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    if method == "session/new":
        return {"sessionId": "pry-1"}
    if method == "session/prompt":
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}
        chunk["content"]["text"] = report(state)  # type: ignore[index]
        send({"jsonrpc": "2.0", "method": "session/update",
              "params": {"sessionId": "pry-1", "update": chunk}})  # fmt: skip
        return {"stopReason": "end_turn"}
    raise LookupError(method)


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    state = sys.argv[1]
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # a notification, or an answer to nothing we asked
        try:
            result = answer(request, state)
        except LookupError:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        else:
            send({"jsonrpc": "2.0", "id": request["id"], "result": result})


if __name__ == "__main__":
    main()
