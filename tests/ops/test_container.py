"""The Dockerfile's steps, run outside Docker (no engine here): the files it copies, installed
as it installs them into a clean virtual environment, started with its command, probed with
its HEALTHCHECK. Dependencies come from the test's own environment instead of the registry.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.http import ROOT, STARTUP


@dataclass
class Steps:
    copies: list[str]  # paths the image copies from the repository
    install: list[str]  # the RUN that installs the package
    command: list[str]
    healthcheck: list[str]
    user: str


def dockerfile_steps(text: str) -> Steps:
    lines = text.replace("\\\n", " ").splitlines()
    instructions = [line.split(None, 1) for line in lines if line and not line.startswith("#")]
    copies: list[str] = []
    install: list[str] = []
    command: list[str] = []
    healthcheck: list[str] = []
    user = "root"
    for keyword, rest in instructions:
        if keyword == "COPY":
            copies += shlex.split(rest)[:-1]
        elif keyword == "RUN" and "pip install" in rest:
            install = shlex.split(rest.split("&&")[0])
        elif keyword == "CMD":
            command = json.loads(rest)
        elif keyword == "HEALTHCHECK":
            healthcheck = json.loads(rest.split(" CMD ", 1)[1])
        elif keyword == "USER":
            user = rest.strip()
    return Steps(copies, install, command, healthcheck, user)


async def run(*argv: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_the_image_steps_install_start_and_pass_the_healthcheck(tmp_path: Path) -> None:
    steps = dockerfile_steps((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    assert steps.user != "root"
    assert steps.install == ["pip", "install", "."]
    assert steps.command[:3] == ["slashgate", "serve", "--host"]

    source = tmp_path / "src"
    source.mkdir()
    for name in steps.copies:  # only what the image gets: a missing file fails here
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(origin, source / name)

    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLASHGATE_", "PYTHON"))}
    status, output = await run(
        sys.executable, "-m", "venv", "--without-pip", str(venv), cwd=tmp_path, env=env
    )
    assert status == 0, output
    python = str(venv / "bin" / "python")
    # The registry is not for tests: the dependencies are the ones this test runs with.
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    status, output = await run(
        sys.executable, "-m", "pip", "--python", python, *steps.install[1:],
        "--no-deps", "--no-index", "--no-build-isolation", "--quiet",
        cwd=source, env=env,
    )  # fmt: skip
    assert status == 0, output
    status, where = await run(
        python, "-c", "import gateway; print(gateway.__file__)", cwd=tmp_path, env=env
    )
    assert where.strip().startswith(str(site)), where  # the installed copy, not the repository

    home = tmp_path / "home"
    home.mkdir()
    server = await asyncio.create_subprocess_exec(
        str(venv / "bin" / steps.command[0]), *steps.command[1:], "--port", "0",
        cwd=home, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert server.stdout is not None
    try:
        line = ""
        while not line.startswith("slashgate listening on "):
            line = (await asyncio.wait_for(server.stdout.readline(), STARTUP)).decode()
            assert line, "the server exited before it listened"
        port = line.rsplit(":", 1)[1].strip()
        assert line.startswith("slashgate listening on http://0.0.0.0:")
        async with aiohttp.ClientSession() as http:
            for path in ("/healthz", "/readyz"):
                async with http.get(f"http://127.0.0.1:{port}{path}") as response:
                    assert response.status == 200, path
        probe_env = {**env, "SLASHGATE_PORT": port}
        healthy, output = await run(python, *steps.healthcheck[1:], cwd=home, env=probe_env)
        assert healthy == 0, output
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), STARTUP)
    down, _ = await run(python, *steps.healthcheck[1:], cwd=home, env=probe_env)
    assert down != 0  # the same check says so once the gateway is gone
