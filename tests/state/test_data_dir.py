"""The gateway's files in one folder (``data_dir``, ``.slashgate/`` by default): the SQLite
state goes there, made 0700 at the first start; ``slashgate check`` makes nothing; the
working folder's ``slashgate-state.sqlite3`` of earlier releases is used, and a line says
how to move it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import ServerFactory
from tests.http import STARTUP


async def say(url: str, text: str) -> str:
    body = {"conversation": "c1", "user": "me", "text": text}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{url}/v1/messages", json=body) as response:
            assert response.status == 200, await response.text()
            return str((await response.json())["reply"]["text"])


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


async def test_the_state_is_kept_in_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gateway_server: ServerFactory
) -> None:
    monkeypatch.chdir(tmp_path)
    async with gateway_server(store="sqlite") as server:
        assert await say(server.url, "/remember hi Hello!") == "Remembered /hi."
    assert files(tmp_path) == [".slashgate", ".slashgate/state.sqlite3"]
    assert (tmp_path / ".slashgate").stat().st_mode & 0o777 == 0o700
    async with gateway_server(store="sqlite", data_dir=tmp_path / "elsewhere") as server:
        assert await say(server.url, "/hi") != "Hello!"  # another folder, another state
    assert (tmp_path / "elsewhere" / "state.sqlite3").is_file()


async def test_the_state_file_of_earlier_releases_is_used_and_how_to_move_it_said(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    gateway_server: ServerFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)
    earlier = {"store": "sqlite", "state_path": Path("slashgate-state.sqlite3")}
    async with gateway_server(**earlier) as server:
        await say(server.url, "/remember hi Hello!")
    with caplog.at_level(logging.WARNING, logger="slashgate"):
        async with gateway_server(store="sqlite") as server:
            assert await say(server.url, "/hi") == "Hello!"
    said = [r.getMessage() for r in caplog.records if "holds the state" in r.getMessage()]
    assert said == [
        "store: slashgate-state.sqlite3 in the working folder holds the state (releases before "
        "data_dir kept it there); it is used while .slashgate/state.sqlite3 does not exist. To "
        "move it: stop the gateway (a clean stop leaves one file), then mkdir -p -m 700 "
        ".slashgate && mv slashgate-state.sqlite3 .slashgate/state.sqlite3. To keep it there: "
        'state_path = "slashgate-state.sqlite3"'
    ]
    assert not (tmp_path / ".slashgate").exists()
    os.makedirs(".slashgate", mode=0o700)
    os.rename("slashgate-state.sqlite3", ".slashgate/state.sqlite3")  # as the line says
    caplog.clear()
    async with gateway_server(store="sqlite") as server:
        assert await say(server.url, "/hi") == "Hello!"
    assert not [r for r in caplog.records if "holds the state" in r.getMessage()]


def test_check_in_an_empty_folder_makes_nothing(tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    checked = subprocess.run(
        [sys.executable, "-m", "slashgate", "check"],
        cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=STARTUP,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    said = "store sqlite: ok (no state yet: .slashgate/state.sqlite3 is made at the first start)"
    assert said in checked.stdout.splitlines()
    assert files(tmp_path) == []
