"""What a failed listen means to the person who started the gateway, in their words."""

from __future__ import annotations

import errno

_WHY = {
    errno.EADDRINUSE: "the port is in use (another slashgate, or another server)",
    errno.EACCES: "this user may not listen on that port (ports below 1024 need privileges)",
    errno.EADDRNOTAVAIL: "that address is none of this machine's",
}
_FIX = {
    errno.EADDRINUSE: "stop what uses it, or choose another port",
    errno.EACCES: "choose a port of 1024 or more",
    errno.EADDRNOTAVAIL: "choose an address of this machine with --host (SLASHGATE_HOST)",
}


def listen_failure(exc: OSError, host: str, port: int) -> str | None:
    """One line naming the address, why it failed and what to change (``--port``), or None
    for a failure that is none of these (said as it is).
    """
    why = _WHY.get(exc.errno or 0)
    if why is None:
        return None
    fix = _FIX[exc.errno or 0]
    if exc.errno != errno.EADDRNOTAVAIL:
        fix += f": slashgate serve --port {_other(port)} (SLASHGATE_PORT; 0 picks a free one)"
    return f"cannot listen on {host or 'every interface'} port {port}: {why}: {fix}"


def _other(port: int) -> int:
    """A port to suggest instead: the next one, or 8080 where that would be privileged."""
    return port + 1 if 1024 <= port < 65535 else 8080
