"""The SQLite state file and its ``-wal`` and ``-shm``: readable by the gateway's user only."""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("slashgate.state")

PRIVATE = 0o600


def private_file(path: Path) -> None:
    """Create ``path`` 0600 before SQLite opens it: SQLite gives the ``-wal`` and ``-shm`` it
    makes the database file's mode. A file an older gateway left readable by others (0644)
    is made private too, with its ``-wal`` and ``-shm``.
    """
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE))
        return
    except FileExistsError:
        pass
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            found = os.stat(name)
        except FileNotFoundError:
            continue
        if found.st_mode & 0o077 and found.st_uid == os.geteuid():
            os.chmod(name, found.st_mode & 0o700)
            log.info("%s was readable by other users: made private (0600)", name)
