"""Configuration mistakes, each refused before anything starts with one line per mistake that
names the file (and line, for a TOML syntax error), the key as the user wrote it, and the
closest valid name; exit status 2.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slashgate.cli import main
from tests.http import ROOT

FILE = "slashgate.toml"
NO_FILE = None  # the row's --config names a file that is not there

# (environment, the file's text, the lines said after "slashgate: bad configuration: ")
MISTAKES: list[tuple[dict[str, str], str | None, list[str]]] = [
    ({}, "prot = 8081\n", [f"{FILE}: prot is not a setting; did you mean port?"]),
    (
        {},
        '[telegram]\ntokn = "123:abc"\n',
        [f"{FILE}: [telegram] tokn is not a setting; did you mean [telegram] token?"],
    ),
    (
        {},
        '[slak]\nbot_token = "xoxb-1"\n',
        [f"{FILE}: [slak] is not a section; did you mean [slack]?"],
    ),
    (
        {},
        '[catalog]\nbusyy = "typo"\n',
        [f"{FILE}: [catalog] busyy is not a message; did you mean [catalog] busy?"],
    ),
    ({}, "port = 8080\n[telegram\n", [f"{FILE}:2:10: not valid TOML: Expected ']' at the end"]),
    ({}, NO_FILE, ["nope.toml: no such file (named by --config)"]),
    (
        {},
        '[telegram]\nmode = "push"\n',
        [f"{FILE}: [telegram] mode: Input should be 'webhook' or 'polling'"],
    ),
    ({}, 'port = "eighty"\n', [f"{FILE}: port: Input should be a valid integer"]),
    (
        {"SLASHGATE_PORT": "eighty"},
        "port = 8081\n",  # the environment wins: it is the one named
        ["SLASHGATE_PORT: Input should be a valid integer"],
    ),
    (
        {},
        'telegram_token = "123:abc"\n[telegram]\ntoken = "123:abc"\n',
        [f"{FILE}: [telegram] token is set twice (also as telegram_token)"],
    ),
    (
        {"SLASHGATE_TELEGRAM_TOKN": "123:abc"},
        "prot = 8081\n[slak]\nx = 1\n",
        [
            "SLASHGATE_TELEGRAM_TOKN is not a setting; did you mean SLASHGATE_TELEGRAM_TOKEN?",
            f"{FILE}: prot is not a setting; did you mean port?",
            f"{FILE}: [slak] is not a section; did you mean [slack]?",
        ],
    ),
    (
        {},
        'run_timeout = -1\n[telegram]\nmode = "push"\n',
        [
            f"{FILE}: run_timeout: Input should be greater than 0",
            f"{FILE}: [telegram] mode: Input should be 'webhook' or 'polling'",
        ],
    ),
    (
        {},
        '[matrix]\nhomeserver = "matrix.example.org"\nuser_id = "slashgate"\npassword = "x"\n',
        [
            f"{FILE}: [matrix] homeserver: must be an http:// or https:// URL, like "
            "https://matrix.example.org",
            f"{FILE}: [matrix] user_id: must be a Matrix user id, like @slashgate:example.org",
        ],
    ),
    (
        {},
        '[catalog]\nunsupported = "No /{command} here"\n',
        [f"{FILE}: [catalog] unsupported: placeholder {{command}}"],
    ),
    (
        {},
        '[catalog]\nplain_busy = "/{name} is busy"\n',
        [f"{FILE}: [catalog] plain_busy: placeholder {{name}}"],
    ),
    ({}, '[catalog]\nbusy = "Busy { retry"\n', [f"{FILE}: [catalog] busy: "]),
    ({"SLASHGATE_LOG_LEVEL": "LOUD"}, "", ["SLASHGATE_LOG_LEVEL: must be one of DEBUG, INFO"]),
    (
        {"SLASHGATE_INTERACTIVE_ONLY": "settings,theme"},
        "",
        ["SLASHGATE_INTERACTIVE_ONLY must be a list in JSON, e.g."],
    ),
    ({"SLASHGATE_ACP_ENV": '["KEY"]'}, "", ["SLASHGATE_ACP_ENV must be a table in JSON"]),
    # A rule over settings names them, and what to set, the way the user gives settings.
    ({"SLASHGATE_SLACK_BOT_TOKEN": "xoxb-1"}, "", ["SLASHGATE_SLACK_SIGNING_SECRET is not set"]),
    ({}, '[slack]\nsigning_secret = "s"\n', ["[slack] bot_token is not set"]),
    (
        {"SLASHGATE_TELEGRAM_TOKEN": "123:abc"},
        "",
        [
            "SLASHGATE_TELEGRAM_SECRET is not set: Telegram webhook mode needs it (the "
            "secret_token given to setWebhook); or set SLASHGATE_TELEGRAM_MODE=polling"
        ],
    ),
    (
        {},
        '[telegram]\ntoken = "123:abc"\n',
        [
            "[telegram] secret is not set: Telegram webhook mode needs it (the secret_token "
            'given to setWebhook); or set [telegram] mode = "polling"'
        ],
    ),
    (
        {},
        '[telegram]\nsecret = "s3cret_for-the-tests"\n',
        ["[telegram] secret is set but [telegram] token is not"],
    ),
    ({}, 'store = "redis"\n', ['store = "redis" needs [redis] url (redis://host:port/db)']),
    ({"SLASHGATE_STORE": "redis"}, "", ["SLASHGATE_STORE=redis needs SLASHGATE_REDIS_URL"]),
    (
        {"SLASHGATE_TELEGRAM_TOKEN": "123:abc"},
        '[telegram]\nsecret = "a"\n',
        [f"{FILE}: [telegram] secret: must be at least 16 characters: it alone proves"],
    ),
    (
        {"SLASHGATE_TELEGRAM_TOKEN": "123:abc", "SLASHGATE_TELEGRAM_SECRET": "not a secret token"},
        "",
        ["SLASHGATE_TELEGRAM_SECRET: must be 1-256 of A-Z, a-z, 0-9, _ and -"],
    ),
    # A secret from a file (the Docker and Kubernetes convention) names the file and how.
    (
        {"SLASHGATE_TELEGRAM_TOKEN_FILE": "missing-token"},
        "",
        ["missing-token: no such file (named by SLASHGATE_TELEGRAM_TOKEN_FILE)"],
    ),
    (
        {},
        '[slack]\nbot_token_file = "."\n',
        [f".: cannot read it: Is a directory (named by {FILE}: [slack] bot_token_file)"],
    ),
    (
        {"SLASHGATE_WEBHOOK_TOKEN": "t0ken-t0ken", "SLASHGATE_WEBHOOK_TOKEN_FILE": "token"},
        "",
        ["SLASHGATE_WEBHOOK_TOKEN_FILE and SLASHGATE_WEBHOOK_TOKEN are both set"],
    ),
    (
        {},
        '[telegram]\ntoken = "123:abc"\ntoken_file = "token"\n',
        [f"{FILE}: [telegram] token_file is set twice (also as [telegram] token)"],
    ),
    ({}, "[redis]\nurl_file = 3\n", [f"{FILE}: [redis] url_file must be a file's path"]),
    (
        {"SLASHGATE_RUNTIME": "pi", "SLASHGATE_AGENT_USER": "no-such-user-here"},
        "",
        ["SLASHGATE_AGENT_USER: no user 'no-such-user-here' on this machine"],
    ),
    (
        {"SLASHGATE_TELEGRAM_TOKEN": "123:abc"},
        '[telegram]\nmode = "polling"\nwebhook_url = "https://gw.example.com/telegram/webhook"\n',
        ['[telegram] webhook_url is set but telegram_mode is "polling"'],
    ),
    (
        {},
        '[slack]\npublic_url = "gw.example.com"\n',
        [f"{FILE}: [slack] public_url: must be the gateway's"],
    ),
    (
        {},
        'runtime = "claude"\n',
        [f'{FILE}: runtime: must be embedded, acp, pi, electric or "package'],
    ),
    # Who may talk (docs/access.md): a policy, or an id, as near as it comes to a valid one.
    (
        {},
        '[telegram]\ndm_policy = "pariing"\n',
        [
            f"{FILE}: [telegram] dm_policy: must be one of pairing, allowlist, open, disabled "
            "(got 'pariing'); did you mean 'pairing'?"
        ],
    ),
    (
        {"SLASHGATE_TELEGRAM_OWNERS": '["@ada"]'},
        "",
        ["SLASHGATE_TELEGRAM_OWNERS: '@ada' is not a Telegram user or chat id (a whole number)"],
    ),
    (
        {},
        '[slack]\nallow_groups = ["<#C024BE91L|general>"]\nowners = ["u024be7lh"]\n',
        [
            f"{FILE}: [slack] allow_groups: '<#C024BE91L|general>' is not a Slack user, channel "
            "or team id (e.g. U024BE7LH); did you mean 'C024BE91L'?",
            f"{FILE}: [slack] owners: 'u024be7lh' is not a Slack user, channel or team id (e.g. "
            "U024BE7LH); did you mean 'U024BE7LH'?",
        ],
    ),
    ({}, 'runtime = "no_such_module:bot"\n', ["runtime: cannot import no_such_module"]),
    ({}, 'runtime = "json:JSONDecoder"\n', ["runtime: json:JSONDecoder is a JSONDecoder, not a"]),
]


@pytest.mark.parametrize(("env", "toml", "said"), MISTAKES)
def test_each_mistake_is_one_line_in_the_users_words(
    env: dict[str, str],
    toml: str | None,
    said: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in [n for n in os.environ if n.upper().startswith("SLASHGATE_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # the file as the user names it, relative
    if toml is not None:
        (tmp_path / FILE).write_text(toml)
    assert main(["serve", "--config", FILE if toml is not None else "nope.toml"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == len(said), lines
    for line, expected in zip(lines, said, strict=True):
        assert line.startswith(f"slashgate: bad configuration: {expected}"), line
    assert "Errno" not in "".join(lines) and "_tokn" not in "".join(lines)


def test_a_config_file_named_by_the_environment_that_is_missing_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLASHGATE_CONFIG", "gone.toml")
    assert main(["check"]) == 2
    assert capsys.readouterr().err == (
        "slashgate: bad configuration: gone.toml: no such file (named by SLASHGATE_CONFIG)\n"
    )
    monkeypatch.setenv("SLASHGATE_CONFIG", str(tmp_path))
    assert main(["check"]) == 2
    assert capsys.readouterr().err == (
        f"slashgate: bad configuration: {tmp_path}: cannot read it: Is a directory\n"
    )


def test_an_acp_agent_program_that_is_not_there_is_one_line_and_status_2(tmp_path: Path) -> None:
    """Not a warning and then ``cannot start: FileNotFoundError: [Errno 2]``: one line, the
    setting as written and the path.
    """
    agent = tmp_path / "no-such-agent"
    config = tmp_path / FILE
    config.write_text(f'runtime = "acp"\nstore = "memory"\n[acp]\ncommand = ["{agent}"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLASHGATE_")}
    served = subprocess.run(
        [sys.executable, "-m", "slashgate", "serve", "--port", "0", "--config", str(config)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert served.returncode == 2, served.stderr
    assert served.stderr == (
        f"slashgate: bad configuration: {config}: [acp] command: {agent} not found or not "
        "executable\n"
    )
