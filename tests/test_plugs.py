"""Runtimes are plugged like channels: ``runtime = name`` chooses a plug of the registry's
``RUNTIMES``, built from its own settings model; a name the registry does not know is refused
with the ones it does; and a channel's or runtime's commands (``slashgate slack manifest``)
come from its plug, into ``slashgate --help`` and the command line.
"""

from __future__ import annotations

import re

import pytest

from gateway.runtimes.acp.runtime import AcpRuntime
from gateway.runtimes.electric.runtime import ElectricRuntime
from gateway.runtimes.embedded import EmbeddedRuntime
from gateway.runtimes.pi.runtime import PiRuntime
from gateway.settings import CoreSettings
from slashgate import Bot, Context, registry
from slashgate.cli import main
from slashgate.config import ConfigError, load_settings
from slashgate.registry import Cli, Inventory, PlugCommand, RuntimePlug, build_runtime
from tests.conftest import make_settings

# What the fake runtime below was built from, in order.
BUILT: list[CoreSettings] = []


def fake_runtime(settings: CoreSettings) -> Bot:
    BUILT.append(settings)
    bot = Bot("fake")

    @bot.command("ping", description="Answer pong")
    async def ping(ctx: Context) -> None:
        await ctx.reply("pong")

    return bot


async def hello(settings: CoreSettings, inventory: Inventory) -> int:
    names = [command.name for command in await inventory()]
    print(f"hello, max_queue {settings.max_queue}: {' '.join(names)}")
    return 3


def queue_needed(settings: CoreSettings) -> str | None:
    return "fake hello needs max_queue above 0" if settings.max_queue == 0 else None


FAKE = RuntimePlug(
    "fake",
    CoreSettings,
    f"{__name__}:fake_runtime",
    cli=Cli(
        "Fake runtime tools",
        (PlugCommand("hello", "say hello with the inventory", hello, queue_needed),),
    ),
)


@pytest.fixture
def with_fake_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "RUNTIMES", (*registry.RUNTIMES, FAKE))
    monkeypatch.setenv("SLASHGATE_STORE", "memory")
    monkeypatch.delenv("SLASHGATE_CONFIG", raising=False)
    BUILT.clear()


def help_text(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.usefixtures("with_fake_runtime")
def test_a_plugs_command_is_in_the_help_and_runs_with_its_settings_and_inventory(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said = help_text(["--help"], capsys)
    assert re.search(r"^ +fake +Fake runtime tools$", said, re.M), said
    assert "say hello with the inventory" in help_text(["fake", "--help"], capsys)
    monkeypatch.setenv("SLASHGATE_RUNTIME", "fake")
    monkeypatch.setenv("SLASHGATE_MAX_QUEUE", "4")
    assert main(["fake", "hello"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("hello, max_queue 4: help new cancel")
    assert out.endswith(" ping\n")
    assert [settings.runtime for settings in BUILT] == ["fake"]


@pytest.mark.usefixtures("with_fake_runtime")
def test_a_plugs_command_refused_by_its_settings_builds_no_runtime(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLASHGATE_RUNTIME", "fake")
    monkeypatch.setenv("SLASHGATE_MAX_QUEUE", "0")
    assert main(["fake", "hello"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "slashgate: bad configuration: fake hello needs max_queue above 0\n"
    assert captured.out == "" and BUILT == []


def test_the_channels_commands_come_from_their_plugs(capsys: pytest.CaptureFixture[str]) -> None:
    said = help_text(["--help"], capsys)
    assert re.search(r"^ +slack +Slack channel tools$", said, re.M), said
    assert re.search(r"^ +discord +Discord channel tools$", said, re.M), said
    # In the order of the registry, between serve and the app's own commands.
    assert [line.split()[0] for line in said.splitlines() if line.startswith("    ")][:5] == [
        "serve",
        "slack",
        "discord",
        "access",
        "check",
    ]
    sync = help_text(["discord", "sync", "--help"], capsys)
    assert "usage: slashgate discord sync [-h] [--config CONFIG] [--env-file ENV_FILE]" in sync
    assert "manifest" in help_text(["slack", "--help"], capsys)


@pytest.mark.parametrize("name", ["embedded", "acp", "pi", "electric"])
def test_a_runtime_is_chosen_by_its_name_and_built_from_its_own_settings(name: str) -> None:
    settings = make_settings(
        runtime=name,
        acp_command=["my-agent", "--acp"],
        pi_pool_size=3,
        electric_entity_type="helper",
    )
    runtime = build_runtime(settings)
    if name == "embedded":
        assert isinstance(runtime, EmbeddedRuntime) and runtime.agent_info().name == "demo"
    elif name == "acp":
        assert isinstance(runtime, AcpRuntime) and runtime.agent.command == ["my-agent", "--acp"]
    elif name == "pi":
        assert isinstance(runtime, PiRuntime) and runtime.pool.pool_size == 3
    else:
        assert isinstance(runtime, ElectricRuntime) and runtime.entity_type == "helper"


@pytest.mark.usefixtures("with_fake_runtime")
def test_a_plugged_runtime_is_chosen_by_the_runtime_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLASHGATE_RUNTIME", "fake")
    settings = load_settings()
    runtime = build_runtime(settings)
    assert isinstance(runtime, Bot) and runtime.agent_info().name == "fake"
    assert BUILT == [settings]


@pytest.mark.usefixtures("with_fake_runtime")
def test_an_unknown_runtime_is_refused_with_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SLASHGATE_RUNTIME", "claude")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert refused.value.problems == [
        'SLASHGATE_RUNTIME: must be embedded, acp, pi, electric, fake or "package.module:name" '
        "of your own"
    ]
    with pytest.raises(ValueError, match=r"runtime: 'claude' must be embedded, acp, pi, elec"):
        build_runtime(make_settings(runtime="claude"))


def test_serve_refuses_an_acp_agent_that_is_not_there(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SLASHGATE_CONFIG", raising=False)
    monkeypatch.setenv("SLASHGATE_STORE", "memory")
    monkeypatch.setenv("SLASHGATE_RUNTIME", "acp")
    monkeypatch.setenv("SLASHGATE_ACP_COMMAND", '["no-such-acp-agent"]')
    assert main(["serve", "--port", "0"]) == 2
    assert capsys.readouterr().err == (
        "slashgate: bad configuration: SLASHGATE_ACP_COMMAND: no-such-acp-agent not found or "
        "not executable\n"
    )
