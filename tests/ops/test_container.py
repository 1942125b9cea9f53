"""The Dockerfiles' steps, run outside Docker (no engine here): the image's, then an image of
your own FROM it (examples/mybot/). Each COPY copies what the image gets into a folder that
stands for the image's file system, each RUN runs as written (pip offline, into a clean
virtual environment), ENV and WORKDIR apply, and the CMD starts from the image's working
directory with no source tree on the path, probed with the HEALTHCHECK. Dependencies come
from the test's own environment instead of the registry.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import re
import shlex
import shutil
import sys
import sysconfig
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from slashgate.config import Settings, check_environment
from tests.http import ROOT, STARTUP

TOKEN = "a-token-for-the-test"
DEPLOY = ROOT / "docs" / "deploy.md"


@dataclass
class Image:
    """An image's state, built into folders: ``fs`` stands for its root."""

    fs: Path
    venv: Path  # the image's Python, where its RUN pip installs go
    env: dict[str, str]
    workdir: str = "/"
    user: str = "root"
    command: list[str] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)
    base: str = ""  # the FROM line
    extras: set[str] = field(default_factory=set)  # the package's extras its pip installs

    def path(self, name: str) -> Path:
        """A path as the image's instructions write it, in the folder that stands for it."""
        return self.fs / os.path.join(self.workdir, name).lstrip("/")

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    lines = dockerfile.read_text(encoding="utf-8").replace("\\\n", " ").splitlines()
    return [
        (keyword, rest)
        for keyword, rest in (line.split(None, 1) for line in lines if line.strip())
        if not keyword.startswith("#")
    ]


async def run(*argv: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode()


async def run_step(image: Image, step: str, env: dict[str, str]) -> None:
    """One command of a RUN line, as the image would run it, with pip kept offline."""
    argv = shlex.split(step)
    if argv[0] == "useradd":  # the user matters to the image only (asserted below)
        return
    if argv[:3] == ["mkdir", "-m", "700"]:
        for name in argv[3:]:
            image.path(name).mkdir(mode=0o700)
        return
    if argv[:2] == ["rm", "-rf"]:
        for name in argv[2:]:
            shutil.rmtree(image.path(name))
        return
    assert argv[0] == "pip", f"a RUN step this test does not know: {step}"
    options = [a for a in argv[1:] if a.startswith("-")]
    if argv[1:] == ["install", "--quiet", ".[matrix]"]:  # the source tree, Matrix's extra too
        command = [sys.executable, "-m", "pip", "--python", image.python, "install", "."]
        command += ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
        image.extras.add("matrix")
    else:  # the files it names, globs expanded, in the image's folder
        files = [p for a in argv[2:] if "/" in a for p in sorted(glob.glob(str(image.path(a))))]
        assert argv[1] == "install" and options == ["--quiet"] and files, step
        command = [sys.executable, "-m", "pip", "--python", image.python, "install", *files]
        command += ["--no-deps", "--no-index", "--quiet"]
    status, output = await run(*command, cwd=image.path("."), env=env)
    assert status == 0, output


async def build(dockerfile: Path, image: Image) -> Image:
    """Apply the Dockerfile's instructions, with its folder as the build context."""
    context = dockerfile.parent
    for keyword, rest in instructions(dockerfile):
        if keyword == "FROM":
            image.base = rest.strip()
        elif keyword == "ENV":
            for pair in shlex.split(rest):
                name, value = pair.split("=", 1)
                image.env[name] = value
        elif keyword == "WORKDIR":
            image.workdir = os.path.join(image.workdir, rest.strip())
            image.path(".").mkdir(parents=True, exist_ok=True)
        elif keyword == "USER":
            image.user = rest.strip()
        elif keyword == "COPY":
            *sources, target = (a for a in shlex.split(rest) if not a.startswith("--"))
            for name in sources:  # only what the image gets: a missing file fails here
                origin = context / name
                into = image.path(target)
                if origin.is_dir():
                    ignore = shutil.ignore_patterns("__pycache__")
                    shutil.copytree(origin, into, ignore=ignore, dirs_exist_ok=True)
                else:
                    into = into / origin.name if target.endswith("/") else into
                    into.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(origin, into)
        elif keyword == "RUN":
            for step in rest.split("&&"):
                await run_step(image, step, image.env)
        elif keyword == "CMD":
            image.command = json.loads(rest)
        elif keyword == "HEALTHCHECK":
            image.healthcheck = json.loads(rest.split(" CMD ", 1)[1])
    return image


async def base_image(tmp_path: Path) -> Image:
    """The repository's image, built from a clean virtual environment (no pip in it)."""
    venv = tmp_path / "venv"
    env = clean_environment()
    status, output = await run(
        sys.executable, "-m", "venv", "--without-pip", str(venv), cwd=tmp_path, env=env
    )
    assert status == 0, output
    # The registry is not for tests: the dependencies are the ones this test runs with.
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    (tmp_path / "fs").mkdir()
    image = await build(ROOT / "Dockerfile", Image(tmp_path / "fs", venv, env))
    assert image.base.startswith("python:")
    assert image.user != "root"
    assert image.command[:4] == ["slashgate", "serve", "--host", "0.0.0.0"]
    assert not (image.fs / "src").exists()  # the source tree is gone; the wheel is installed
    assert "matrix" in image.extras  # Matrix's encrypted rooms need mautrix and python-olm
    assert image.path(".slashgate").stat().st_mode & 0o777 == 0o700  # the volume's owner
    for module in ("gateway", "slashgate"):  # the public API too (docs/extending.md)
        status, where = await run(
            image.python, "-c", f"import {module}; print({module}.__file__)",
            cwd=image.path("."), env=image.env,
        )  # fmt: skip
        assert status == 0 and where.strip().startswith(str(site)), where
    return image


def clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SLASHGATE_", "PYTHON"))}


@dataclass
class Container:
    url: str
    process: asyncio.subprocess.Process


@asynccontextmanager
async def started(image: Image, **settings: str) -> AsyncIterator[Container]:
    """The image's CMD from its working directory, on a free port, with ``SLASHGATE_*``."""
    env = {**image.env, **{f"SLASHGATE_{k.upper()}": v for k, v in settings.items()}}
    program, *arguments = image.command
    server = await asyncio.create_subprocess_exec(
        str(image.venv / "bin" / program), *arguments, "--port", "0",
        cwd=image.path("."), env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert server.stdout is not None
    try:
        line = ""
        while not line.startswith("slashgate listening on "):
            line = (await asyncio.wait_for(server.stdout.readline(), STARTUP)).decode()
            assert line, "the server exited before it listened"
        assert line.startswith("slashgate listening on http://0.0.0.0:")
        yield Container(f"http://127.0.0.1:{line.rsplit(':', 1)[1].strip()}", server)
    finally:
        if server.returncode is None:
            server.terminate()
        await asyncio.wait_for(server.wait(), STARTUP)


async def test_the_image_installs_the_package_starts_and_passes_the_healthcheck(
    tmp_path: Path,
) -> None:
    image = await base_image(tmp_path)
    # docker run -p 8080:8080 without a token: an open webhook on every interface is refused.
    status, output = await run(
        str(image.venv / "bin" / image.command[0]), *image.command[1:], "--port", "0",
        cwd=image.path("."), env=image.env,
    )  # fmt: skip
    assert status == 2 and "SLASHGATE_WEBHOOK_TOKEN" in output, output  # bad configuration

    async with started(image, webhook_token=TOKEN) as container:
        async with aiohttp.ClientSession() as http:
            for path in ("/healthz", "/readyz"):
                async with http.get(container.url + path) as response:
                    assert response.status == 200, path
        probe_env = {**image.env, "SLASHGATE_PORT": container.url.rsplit(":", 1)[1]}
        healthy, output = await run(
            image.python, *image.healthcheck[1:], cwd=image.path("."), env=probe_env
        )
        assert healthy == 0, output
    down, _ = await run(image.python, *image.healthcheck[1:], cwd=image.path("."), env=probe_env)
    assert down != 0  # the same check says so once the gateway is gone


async def test_an_image_from_it_answers_its_own_command(tmp_path: Path) -> None:
    dockerfile = ROOT / "examples" / "mybot" / "Dockerfile"
    shown = re.search(r"```dockerfile\n(.*?)```", DEPLOY.read_text(encoding="utf-8"), re.S)
    assert shown is not None and shown.group(1) == dockerfile.read_text(encoding="utf-8")
    image = await build(dockerfile, await base_image(tmp_path))
    assert image.base in ("slashgate", "slashgate:latest")  # docker build -t slashgate .
    async with started(image, webhook_token=TOKEN) as container:
        body = {"conversation": "c1", "user": "ada", "text": "/greet Ada"}
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with aiohttp.ClientSession(headers=headers) as http:
            async with http.post(container.url + "/v1/messages", json=body) as response:
                reply = (await response.json())["reply"]
            async with http.get(container.url + "/v1/commands") as response:
                names = [c["name"] for c in (await response.json())["commands"]]
    assert reply["text"] == "Hello, Ada! (from webhook:c1)", reply
    assert "greet" in names


def test_env_example_lists_every_secret_with_a_comment() -> None:
    text = (ROOT / ".env.example").read_text(encoding="utf-8").splitlines()
    listed: dict[str, str] = {}  # variable -> its example value
    commented: dict[str, str] = {}  # variable -> the comment of its paragraph
    comment = ""
    for line in text:
        bare = line.lstrip("# ")
        if bare.startswith("SLASHGATE_") and "=" in bare:
            name, value = bare.split("=", 1)
            listed[name], commented[name] = value, comment
        elif line.startswith("#"):
            comment += line
        else:
            comment = ""
    secrets = {
        f"SLASHGATE_{name.upper()}"
        for name, info in Settings.model_fields.items()
        if "SecretStr" in str(info.annotation)
    }
    assert secrets <= set(listed), sorted(secrets - set(listed))
    assert all(commented[name] for name in secrets), "each secret needs its comment"
    check_environment(listed)  # each is a setting by that name, its example of the right shape
