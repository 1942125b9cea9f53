"""The agent's side of the gateway (docs/security.md): the folder an agent process works in,
the user it runs as, and the ``@file:`` references that may point into that folder.

The ``acp`` and ``pi`` agents start in ``workspace`` (made 0700 at start) unless their
``cwd`` setting names another folder: never, by default, the gateway's own folder with its
state file and settings. A gateway that runs as root starts them as ``agent_user``. Those two
settings are ``AgentSettings``, which the settings of such a runtime subclass.

An ``@file:`` reference becomes a file link (ACP's ``resource_link``, Electric's ``file``
node, ``ctx.references`` of a ``slashgate.Bot``) only when its path stays inside the agent's
folder: not ``~``, not an absolute path outside it, no ``..`` that leaves it, no symbolic link
that points out. Any other reaches the agent as the text typed, like the words around it.
"""

from __future__ import annotations

import os
import posixpath
import pwd
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..settings import CoreSettings


@dataclass(frozen=True, slots=True)
class AgentUser:
    """The user an agent process runs as (``agent_user``)."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @classmethod
    def of(cls, spec: str, setting: str = "agent_user") -> AgentUser | None:
        """The user ``spec`` names (a name or a uid); None when it is the gateway's own user
        (nothing to change). ValueError, naming ``setting``, when there is no such user or
        the gateway cannot start a process as it (it does not run as root).
        """
        try:
            entry = pwd.getpwuid(int(spec)) if spec.strip().isdigit() else pwd.getpwnam(spec)
        except KeyError:
            raise ValueError(f"{setting}: no user {spec!r} on this machine") from None
        if entry.pw_uid == os.geteuid():
            return None
        if os.geteuid() != 0:
            raise ValueError(
                f"{setting}: starting the agent as {entry.pw_name} needs the gateway to run as "
                f"root (it runs as uid {os.geteuid()})"
            )
        groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
        return cls(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


class AgentSettings(CoreSettings):
    """The settings of a runtime that starts an agent program on this machine: these two,
    shared, and its own ``<runtime>_command`` and ``<runtime>_cwd`` (``acp_command``), which
    ``agent_command`` and ``agent_cwd`` read by the runtime's name.
    """

    workspace: Path = Path("slashgate-workspace")
    """The `acp` and `pi` agents' working folder unless `acp_cwd` or `pi_cwd` names another:
    made (0700) at start, apart from the gateway's state and settings."""
    agent_user: str | None = None
    """When the gateway runs as root: the user (name or uid) the agent runs as."""

    def agent_command(self, runtime: str) -> list[str]:
        """The command line of the ``runtime``'s agent (``acp_command``)."""
        command: list[str] = getattr(self, f"{runtime}_command")
        return command

    def agent_cwd(self, runtime: str) -> Path:
        """The working folder of the ``runtime``'s agent: its ``cwd`` setting, else the
        workspace.
        """
        configured: Path | None = getattr(self, f"{runtime}_cwd")
        return self.workspace if configured is None else configured

    def agent_place(self, runtime: str) -> AgentPlace:
        """Where and as whom the ``runtime``'s agent runs: its folder (the workspace, made at
        start, unless its ``cwd`` setting names another) and ``agent_user`` (unset: the
        gateway's own user).
        """
        made = getattr(self, f"{runtime}_cwd") is None
        user = (
            None
            if self.agent_user is None
            else AgentUser.of(self.agent_user, self.named("agent_user"))
        )
        return AgentPlace(self.agent_cwd(runtime).expanduser().resolve(), made, user)


@dataclass(slots=True)
class AgentPlace:
    """Where and as whom an agent process runs: ``cwd`` (made at start when it is the
    gateway's ``workspace``), and ``user`` (None: the gateway's own).
    """

    cwd: Path
    workspace: bool = False
    user: AgentUser | None = None
    made: bool = False

    def prepare(self) -> None:
        """Make the workspace, 0700, owned by the agent's user (once, at start)."""
        if not self.workspace or self.made:
            return
        self.cwd.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.user is not None and self.cwd.stat().st_uid != self.user.uid:
            os.chown(self.cwd, self.user.uid, self.user.gid)
        self.made = True

    def spawn_options(self) -> dict[str, Any]:
        """``cwd``, and the user, group and groups of the agent's user, for ``spawn``."""
        options: dict[str, Any] = {"cwd": self.cwd}
        if self.user is not None:
            user = self.user
            options.update(user=user.uid, group=user.gid, extra_groups=list(user.groups))
        return options

    def environment(self) -> dict[str, str]:
        """The variables that say who the agent's user is (HOME, USER, LOGNAME); none when
        it runs as the gateway's user.
        """
        if self.user is None:
            return {}
        return {"HOME": self.user.home, "USER": self.user.name, "LOGNAME": self.user.name}


def inside(path: str, folder: Path | None) -> bool:
    """Whether an ``@file:`` reference's ``path`` stays inside the agent's ``folder``:
    resolved there, symbolic links followed, when the folder is on this machine; for a
    folder the gateway cannot see (None: an Electric agent, a ``slashgate.Bot``), a relative
    path whose ``..`` never leaves it.
    """
    if not path or path.startswith("~") or "\0" in path:
        return False
    if folder is None:
        normal = posixpath.normpath(path)
        return not (posixpath.isabs(path) or normal == ".." or normal.startswith("../"))
    try:
        base = folder.resolve()
        target = Path(path) if Path(path).is_absolute() else base / path
        return target.resolve().is_relative_to(base)
    except (OSError, RuntimeError, ValueError):  # a symbolic link loop, a name too long
        return False


def target(path: str, folder: Path) -> Path:
    """The file an ``@file:`` reference that stays ``inside`` the folder names."""
    base = folder.resolve()
    return (Path(path) if Path(path).is_absolute() else base / path).resolve()


def as_text_outside(
    nodes: list[dict[str, Any]], folder: Path | None = None
) -> list[dict[str, Any]]:
    """Composer nodes as JSON, each ``file`` node whose path leaves ``folder`` (see
    ``inside``) made a ``text`` node of what was typed.
    """
    return [
        {"kind": "text", "start": n["start"], "end": n["end"], "raw": n["raw"]}
        if n.get("kind") == "file" and not inside(str(n.get("path", "")), folder)
        else n
        for n in nodes
    ]
