"""Keeping the gateway's secrets from the agent and from other processes of the same user
(docs/security.md). Standard library only, and importable from its file alone.

Once the settings are read, ``seal`` removes the secret variables from the process's
environment (no child inherits them) and, on Linux, makes the process non-dumpable
(``prctl(PR_SET_DUMPABLE, 0)``): its ``/proc/<pid>`` files then belong to root, so a process of
the same user can read neither ``/proc/<pid>/environ`` (which keeps the environment the
process started with, whatever is removed later) nor its memory, nor attach a debugger. It
also means no core dump. Root can still read both: the agent runs as another user
(``agent_user``) when the gateway runs as root.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Iterable, MutableMapping
from typing import Any

PR_SET_DUMPABLE = 4  # <linux/prctl.h>
PR_GET_DUMPABLE = 3


def seal(variables: Iterable[str], environ: MutableMapping[str, str] = os.environ) -> bool:
    """Remove ``variables`` from ``environ`` and make the process non-dumpable. True when it
    is non-dumpable now (False where the system has no such switch: not Linux).
    """
    for name in list(variables):
        environ.pop(name, None)
    return non_dumpable()


def non_dumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)``; True when it took."""
    if not sys.platform.startswith("linux"):
        return False
    prctl = _prctl()
    if prctl is None or prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        return False
    return bool(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)


def _prctl() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl
