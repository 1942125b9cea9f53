"""The agent's folder and user (gateway/runtimes/workspace.py): the workspace made 0700 for
the agent's user, ``agent_user`` only where the gateway can start a process as it, and the
agent's folder defaulting to the workspace (``acp_cwd``/``pi_cwd`` defaulted to ``.``: the
gateway's own folder, issue 32).
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

from gateway.runtimes.acp.runtime import AcpRuntime
from gateway.runtimes.pi.runtime import PiRuntime
from gateway.runtimes.workspace import AgentPlace, AgentUser
from slashgate.config import Settings
from slashgate.registry import build_runtime
from tests.conftest import make_settings

ROOTED = os.geteuid() == 0


def test_by_default_the_agents_folder_is_the_workspace_not_the_gateways() -> None:
    defaults = Settings.model_fields
    assert defaults["acp_cwd"].default is None and defaults["pi_cwd"].default is None
    assert defaults["workspace"].default == Path("slashgate-workspace")
    settings = make_settings(runtime="acp", acp_command=["agent"], workspace=Path("w"))
    runtime = build_runtime(settings)
    assert isinstance(runtime, AcpRuntime)
    assert runtime.agent.place.cwd == Path("w").resolve() != Path.cwd()
    assert runtime.agent.place.workspace
    chosen = build_runtime(make_settings(runtime="pi", pi_cwd=Path("/srv/checkout")))
    assert isinstance(chosen, PiRuntime)
    assert chosen.pool.place.cwd == Path("/srv/checkout") and not chosen.pool.place.workspace


def test_the_workspace_is_made_0700_once_and_a_chosen_folder_is_not_made(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        place = AgentPlace(tmp_path / "a" / "workspace", workspace=True)
        place.prepare()
        chosen = AgentPlace(tmp_path / "checkout", workspace=False)
        chosen.prepare()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a" / "workspace").stat().st_mode) == 0o700
    assert not (tmp_path / "checkout").exists()


def test_the_gateways_own_user_changes_nothing() -> None:
    assert AgentUser.of(str(os.geteuid())) is None
    assert AgentUser.of(pwd.getpwuid(os.geteuid()).pw_name) is None
    assert AgentPlace(Path("/w")).spawn_options() == {"cwd": Path("/w")}
    assert AgentPlace(Path("/w")).environment() == {}


@pytest.mark.skipif(not ROOTED, reason="only root starts a process as another user")
def test_as_root_the_agent_runs_as_agent_user(tmp_path: Path) -> None:
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody")
    user = AgentUser.of("nobody")
    assert user is not None and (user.uid, user.gid) == (nobody.pw_uid, nobody.pw_gid)
    assert 0 not in user.groups, "root's groups are not the agent's"
    place = AgentPlace(tmp_path / "workspace", workspace=True, user=user)
    place.prepare()
    assert (tmp_path / "workspace").stat().st_uid == nobody.pw_uid
    assert place.spawn_options() == {
        "cwd": tmp_path / "workspace",
        "user": nobody.pw_uid,
        "group": nobody.pw_gid,
        "extra_groups": list(user.groups),
    }
    assert place.environment() == {"HOME": nobody.pw_dir, "USER": "nobody", "LOGNAME": "nobody"}


@pytest.mark.skipif(ROOTED, reason="root may start a process as any user")
def test_another_agent_user_needs_a_gateway_that_runs_as_root() -> None:
    other = next(p for p in pwd.getpwall() if p.pw_uid != os.geteuid())
    with pytest.raises(ValueError, match="needs the gateway to run as root"):
        AgentUser.of(other.pw_name, "SLASHGATE_AGENT_USER")
