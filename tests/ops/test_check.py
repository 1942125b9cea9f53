"""``slashgate check``: one line per part, each platform and the runtime reached once, a
non-zero exit when any part fails, and no secret printed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tests.http import ROOT
from tests.slack.slack_fake import APP_TOKEN, BOT_TOKEN, SIGNING_SECRET, fake_slack
from tests.telegram.fake_bot_api import FakeBotAPI


async def check(config: Path) -> tuple[int, list[str]]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "slashgate", "check", "--config", str(config),
        cwd=ROOT, env=clean, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, (out.decode() + err.decode()).splitlines()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


async def test_every_part_is_reached_once_and_reported_on_one_line(tmp_path: Path) -> None:
    async with FakeBotAPI() as telegram, fake_slack() as slack:
        config = write(
            tmp_path / "slashgate.toml",
            f"""
            state_path = "{tmp_path / "state.sqlite3"}"
            [telegram]
            token = "{telegram.token}"
            secret = "s3cret-s3cret"
            api_base = "{telegram.url}"
            [slack]
            bot_token = "{BOT_TOKEN}"
            signing_secret = "{SIGNING_SECRET}"
            app_token = "{APP_TOKEN}"
            api_base = "{slack.api_base}"
            """,
        )
        status, lines = await check(config)
        assert [c.method for c in telegram.calls] == ["getMe"]
        assert [c.method for c in slack.calls] == ["auth.test", "apps.connections.open"]
    assert status == 0, lines
    assert lines == [
        "config: ok (runtime embedded; channels webhook, webchat, telegram, slack)",
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
    assert lines[1] == "runtime pi: FAILED: no-such-pi-program not found or not executable"
    assert lines[2] == "store memory: ok (memory store answers)"
    assert lines[4] == "webchat: ok (no platform to reach)"
    assert lines[5].startswith("telegram: FAILED: Telegram")
    assert not any(wrong in line for line in lines)


async def test_a_configuration_error_is_refused_before_anything_is_reached(tmp_path: Path) -> None:
    config = write(tmp_path / "slashgate.toml", 'runtime = "nope"\n')
    status, lines = await check(config)
    assert status == 2
    assert lines[0].startswith("slashgate: bad configuration:")


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
    assert status == 1
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
