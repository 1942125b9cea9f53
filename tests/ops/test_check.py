"""``slashgate check``: one line per part, each platform and the runtime reached once, a
non-zero exit when any part fails, and no secret printed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from gateway.state import SqliteStore
from tests import zygote
from tests.http import ROOT, WORKSPACE
from tests.slack.slack_fake import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, fake_slack
from tests.telegram.fake_bot_api import FakeBotAPI

ROOTED = os.geteuid() == 0


async def check(config: Path) -> tuple[int, list[str]]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    clean["SLASHGATE_WORKSPACE"] = str(WORKSPACE)  # the agent's folder, not in the checkout
    # Forked from the test zygote: a fresh interpreter would import aiogram again (2 s of CPU).
    process = await zygote.start_python(
        "slashgate", "check", "--config", str(config),
        cwd=ROOT, env=clean, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, (out.decode() + err.decode()).splitlines()


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    """The settings file, for its user alone: one others may read is a warning with secrets."""
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


async def test_every_part_is_reached_once_and_reported_on_one_line(tmp_path: Path) -> None:
    made = SqliteStore(tmp_path / "state.sqlite3")  # as a first start leaves it
    await made.open()
    await made.close()
    async with FakeBotAPI() as telegram, fake_slack() as slack:
        config = write(
            tmp_path / "slashgate.toml",
            f"""
            state_path = "{tmp_path / "state.sqlite3"}"
            [telegram]
            token = "{telegram.token}"
            secret = "s3cret-s3cret-s3cret"
            api_base = "{telegram.url}"
            [slack]
            bot_token = "{BOT_TOKEN}"
            signing_secret = "{SIGNING_SECRET}"
            app_token = "{APP_TOKEN}"
            api_base = "{slack.api_base}"
            dm_policy = "open"
            owners = ["U024BE7LH"]
            """,
        )
        status, lines = await check(config)
        assert [c.method for c in telegram.calls] == ["getMe"]
        assert [c.method for c in slack.calls] == ["auth.test", "apps.connections.open"]
    assert status == 0, lines
    assert lines == [
        "config: ok (runtime embedded; channels webhook, webchat, telegram, slack)",
        "access telegram: dm_policy=pairing group_policy=allowlist group_members=anyone "
        "owners: none configured",
        "access slack: dm_policy=open group_policy=allowlist group_members=anyone "
        "owners: U024BE7LH",
        "warning: slack: dm_policy is open: anyone who finds the bot drives the agent",
        "runtime embedded: ok (embedded (demo))",
        "store sqlite: ok (sqlite store answers)",
        "webhook: ok (no platform to reach)",
        "webchat: ok (no platform to reach)",
        "telegram: ok (@gw_bot (id 123456))",
        "slack: ok (team Test, bot user UBOT, Socket Mode app token accepted)",
    ]


async def test_a_refused_token_fails_its_line_and_the_exit_status(tmp_path: Path) -> None:
    async with FakeBotAPI() as telegram:
        wrong = telegram.token + "x"
        config = write(
            tmp_path / "slashgate.toml",
            f"""
            runtime = "pi"
            store = "memory"
            pi_command = ["no-such-pi-program"]
            [telegram]
            token = "{wrong}"
            mode = "polling"
            api_base = "{telegram.url}"
            """,
        )
        status, lines = await check(config)
    assert status == 1
    assert lines[0].startswith("config: ok")
    assert lines[1].startswith("access telegram: dm_policy=pairing")
    assert lines[2] == "runtime pi: FAILED: no-such-pi-program not found or not executable"
    assert lines[3] == "store memory: ok (memory store answers)"
    assert lines[5] == "webchat: ok (no platform to reach)"
    assert lines[6].startswith("telegram: FAILED: Telegram")
    assert not any(wrong in line for line in lines)


async def test_a_configuration_error_is_refused_before_anything_is_reached(tmp_path: Path) -> None:
    config = write(tmp_path / "slashgate.toml", 'runtime = "nope"\n')
    status, lines = await check(config)
    assert status == 2
    assert lines[0].startswith("slashgate: bad configuration:")


async def test_each_setting_that_leaves_something_open_is_a_warning(tmp_path: Path) -> None:
    """After the parts, one ``warning:`` line per unsafe setting; the exit status stays 0."""
    config = write(
        tmp_path / "slashgate.toml",
        f"""
        runtime = "pi"
        store = "sqlite"
        state_path = "{tmp_path / "state.sqlite3"}"
        library_log_level = "DEBUG"
        [pi]
        command = ["{sys.executable}", "-c", "pass"]
        cwd = "{tmp_path}"
        [attachment]
        allow_private_urls = true
        [webhook]
        token = "whk-0123456789abcdef"
        """,
        mode=0o644,
    )
    status, lines = await check(config)
    assert status == 0, lines
    warnings = [line for line in lines if line.startswith("warning: ")]
    assert lines[-len(warnings) :] == warnings  # after the parts
    expected = [
        f"warning: {config}: [attachment] allow_private_urls is on: POST /v1/messages fetches",
        f"warning: {config}: [pi] cwd is {tmp_path}, which holds {config}, "
        f"{tmp_path / 'state.sqlite3'}: the agent works there",
        *(["warning: the gateway runs as root and agent_user is not set"] if ROOTED else []),
        f"warning: {config}: library_log_level is DEBUG: with log_level there too",
        f"warning: {config} holds webhook_token and other users may read it: chmod 600 it",
    ]
    assert len(warnings) == len(expected), warnings
    for line, start in zip(warnings, expected, strict=True):
        assert line.startswith(start), line
    assert "whk-0123456789abcdef" not in "".join(lines)


async def test_a_safe_configuration_has_no_warning(tmp_path: Path) -> None:
    config = write(
        tmp_path / "slashgate.toml",
        f"""
        runtime = "pi"
        store = "memory"
        {'agent_user = "nobody"' if ROOTED else ""}
        [pi]
        command = ["{sys.executable}", "-c", "pass"]
        [webhook]
        token = "whk-0123456789abcdef"
        """,
    )
    status, lines = await check(config)
    assert status == 0, lines
    assert not [line for line in lines if line.startswith("warning: ")], lines


async def test_each_unsafe_setting_of_the_http_api_is_a_warning(tmp_path: Path) -> None:
    config = write(
        tmp_path / "slashgate.toml",
        """
        host = "0.0.0.0"
        store = "memory"
        allowed_hosts = ["*"]
        cors_origins = ["https://app.example.com"]
        [webhook]
        allow_public = true
        """,
    )
    status, lines = await check(config)
    assert status == 0, lines
    assert lines[1:4] == [
        "warning: /v1/* is open to anyone who reaches 0.0.0.0 (no webhook_token; "
        "webhook_allow_public = true)",
        'warning: allowed_hosts = ["*"]: any Host header is served, so a web page that rebinds '
        "its name to this address can call the API and read its answers",
        "warning: cors_origins without webhook_token: the pages of https://app.example.com run "
        "the agent from the browser of whoever visits them",
    ]
    assert lines[4].startswith("runtime embedded: ok")


async def test_a_configuration_serve_would_refuse_fails_the_check(tmp_path: Path) -> None:
    config = write(tmp_path / "slashgate.toml", 'host = "0.0.0.0"\nstore = "memory"\n')
    status, lines = await check(config)
    assert status == 2, "what serve refuses is a configuration error"
    assert lines[1].startswith(
        "serve: FAILED: cannot start: the webhook API (/v1/*) would be open to anyone who "
        "reaches 0.0.0.0: set webhook_token"
    )
    assert lines[2].startswith("runtime embedded: ok")
    # On loopback, served open through a proxy on purpose: said too.
    config = write(tmp_path / "open.toml", 'store = "memory"\n[webhook]\nallow_public = true\n')
    status, lines = await check(config)
    assert status == 0
    assert lines[1].startswith("warning: webhook_allow_public = true without webhook_token")
