"""``@file:`` references stay in the agent's folder (gateway/runtimes/workspace.py): a path that
leaves it (``..``, an absolute path elsewhere, ``~``, a symbolic link that points out) is no
file link on any runtime but the text typed. ``@file:../../etc/passwd`` was
``file:///etc/passwd`` for an ACP agent (issue 32).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from contract import ComposerInputMessage, ComposerInputPayload
from gateway.core import Gateway
from gateway.inbound import InboundMessage
from gateway.runtimes import Turn
from gateway.runtimes.pi.mapping import pi_message
from gateway.runtimes.workspace import as_text_outside, inside
from slashgate import Bot, Context, Reference
from slashgate.registry import build_runtime
from tests.acp.test_acp_runtime import acp_settings
from tests.conftest import make_settings
from tests.recorder import Recorder

LEAVING = [
    "../../etc/passwd",
    "a/../../x",
    "/etc/passwd",
    "/proc/self/environ",
    "~/.ssh/id_rsa",
    "~",
    "~root/.profile",
    "link-out/passwd",  # a symbolic link in the folder to /etc
    "link-out",
]
STAYING = ["src/a.py", "a/../b.txt", "./notes.txt", ".", "link-in/a.py", "missing/file.py"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "link-out").symlink_to("/etc")
    (work / "link-in").symlink_to(work / "src")
    return work


@pytest.mark.parametrize("path", LEAVING)
def test_a_path_that_leaves_the_folder_is_not_inside(folder: Path, path: str) -> None:
    assert not inside(path, folder)


@pytest.mark.parametrize("path", STAYING)
def test_a_path_that_stays_in_the_folder_is_inside(folder: Path, path: str) -> None:
    assert inside(path, folder)


def test_an_absolute_path_inside_the_folder_is_inside(folder: Path) -> None:
    assert inside(str(folder / "src" / "a.py"), folder)
    assert not inside(str(folder.parent / "state.sqlite3"), folder)


def test_without_a_folder_to_look_at_only_relative_paths_that_stay_are_inside() -> None:
    """Electric's agents and a slashgate.Bot: the folder is not the gateway's to see."""
    assert [inside(p, None) for p in ("src/a.py", "a/../b", "./x")] == [True, True, True]
    assert not any(inside(p, None) for p in ("../x", "a/../../x", "/etc/passwd", "~/x", ".."))


async def test_acp_gets_links_inside_its_folder_and_the_text_typed_for_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "link-out").symlink_to("/etc")
    settings = acp_settings(tmp_path)
    gw = Gateway(settings, build_runtime(settings))
    await asyncio.wait_for(gw.start(), 20)
    try:
        sink = Recorder()
        text = (
            "read @file:../../etc/passwd @file:~/.ssh/id_rsa @file:/proc/self/environ "
            "@file:link-out/passwd and @file:src/a.py"
        )
        await asyncio.wait_for(gw.handle(InboundMessage("test", "c1", "ann", text), sink), 20)
    finally:
        await asyncio.wait_for(gw.stop(), 20)
    uri = (tmp_path / "src" / "a.py").resolve().as_uri()
    assert sink.reply is not None
    assert sink.reply.text == (
        "echo: text:read @file:../../etc/passwd @file:~/.ssh/id_rsa @file:/proc/self/environ "
        f"@file:link-out/passwd and  | link:src/a.py:{uri}"
    )
    assert "file:///etc" not in sink.reply.text and "file:///proc" not in sink.reply.text


def test_a_leaving_file_node_is_made_a_text_node_of_what_was_typed() -> None:
    nodes = [
        {"kind": "text", "start": 0, "end": 4, "raw": "see "},
        {"kind": "file", "start": 4, "end": 26, "raw": "@file:../../etc/passwd", "path": "../.."},
        {"kind": "file", "start": 27, "end": 37, "raw": "@file:a.py", "path": "a.py"},
    ]
    assert as_text_outside(nodes) == [
        nodes[0],
        {"kind": "text", "start": 4, "end": 26, "raw": "@file:../../etc/passwd"},
        nodes[2],
    ]


async def test_a_bots_references_are_those_that_stay_in_the_folder() -> None:
    seen: list[Context] = []
    bot = Bot("reader")

    @bot.command("read", hint="files")
    async def read(ctx: Context) -> None:
        seen.append(ctx)
        await ctx.reply("ok")

    gw = Gateway(make_settings(), bot)
    await gw.start()
    try:
        text = "/read @file:../../etc/passwd @file:/etc/shadow @file:~/.ssh/id_rsa @file:a.py"
        await gw.handle(InboundMessage("test", "c1", "ann", text), Recorder())
    finally:
        await gw.stop()
    assert seen[0].references == (Reference("file", "a.py", "@file:a.py"),)
    assert seen[0].text == text  # the others are in the text, as typed


def test_pi_gets_every_reference_as_the_text_typed() -> None:
    """pi's prompt is text: no reference is a file link there, inside or not."""
    text = "read @file:../../etc/passwd and @file:src/a.py"
    message = ComposerInputMessage(payload=ComposerInputPayload(source=text))
    assert pi_message(Turn(message, None, "", "ann"), vision=False) == text
