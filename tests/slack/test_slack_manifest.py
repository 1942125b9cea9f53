"""``slashgate slack manifest``: Slack's naming rules, reserved names, the cap, the URLs."""

from __future__ import annotations

import json

from pydantic import SecretStr

from channels.slack.manifest import MAX_SLASH_COMMANDS, build_manifest, slack_command_name
from contract import Command
from gateway.core import Gateway
from gateway.runtimes.embedded import EmbeddedRuntime, EntityDefinition, HandlerContext
from slashgate.cli import main
from tests.conftest import make_settings


def names(manifest: dict) -> list[str]:
    return [c["command"] for c in manifest["features"]["slash_commands"]]


def test_commands_follow_slacks_naming_rules_and_skip_reserved_names():
    commands = [
        Command(name="help", description="List commands"),
        Command(name="status", description="Show session status"),  # Slack's own /status
        Command(name="remind"),
        Command(name="Deploy", description="Deploy a build", hint="environment"),
        Command(name="pr-review", description="Review a pull request"),
        Command(name="skill:triage"),
        Command(name="memory show"),
        Command(name="x" * 31),
        Command(name="y" * 32),
        Command(name="agent", description="would shadow the umbrella"),
        Command(name="deploy", description="a duplicate after lower-casing"),
    ]
    settings = make_settings(slack_public_url="https://gw.example.com/")
    manifest = build_manifest(commands, settings)
    assert names(manifest) == ["/agent", "/help", "/deploy", "/pr-review", "/" + "x" * 31]
    entry = manifest["features"]["slash_commands"][2]
    assert entry == {
        "command": "/deploy",
        "description": "Deploy a build",
        "should_escape": False,
        "usage_hint": "<environment>",
        "url": "https://gw.example.com/slack/events",
    }
    assert all(
        len(name) <= 32 and name == name.lower() and " " not in name for name in names(manifest)
    )
    assert slack_command_name("status") is None and slack_command_name("Echo") == "/echo"


def test_slacks_cap_on_slash_commands_is_respected():
    commands = [Command(name=f"cmd{n}") for n in range(80)]
    manifest = build_manifest(commands, make_settings(slack_public_url="https://gw.example.com"))
    assert len(names(manifest)) == MAX_SLASH_COMMANDS == 50
    assert names(manifest)[:2] == ["/agent", "/cmd0"]


def test_events_scopes_and_request_urls():
    manifest = build_manifest([], make_settings(slack_public_url="https://gw.example.com"))
    settings = manifest["settings"]
    url = "https://gw.example.com/slack/events"
    assert settings["event_subscriptions"] == {
        "bot_events": ["app_mention", "message.im"],
        "request_url": url,
    }
    assert settings["interactivity"] == {"is_enabled": True, "request_url": url}
    assert settings["socket_mode_enabled"] is False
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == {
        "app_mentions:read",
        "chat:write",
        "commands",
        "files:read",
        "im:history",
        "reactions:write",  # the mark on queued messages
    }
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True


def test_socket_mode_needs_no_request_urls():
    manifest = build_manifest(
        [Command(name="deploy")], make_settings(slack_app_token=SecretStr("xapp-1"))
    )
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert "request_url" not in manifest["settings"]["event_subscriptions"]
    assert "request_url" not in manifest["settings"]["interactivity"]
    assert all("url" not in c for c in manifest["features"]["slash_commands"])


def test_the_cli_prints_the_manifest_of_the_effective_inventory(monkeypatch, capsys):
    monkeypatch.setenv("SLASHGATE_SLACK_PUBLIC_URL", "https://gw.example.com")
    monkeypatch.setenv("SLASHGATE_SLACK_UMBRELLA_COMMAND", "ask")
    monkeypatch.delenv("SLASHGATE_CONFIG", raising=False)
    assert main(["slack", "manifest"]) == 0
    manifest = json.loads(capsys.readouterr().out)
    # The embedded demo runtime's inventory, host commands first; /status is Slack's own.
    assert names(manifest) == [
        "/ask",
        "/help",
        "/new",
        "/cancel",
        "/echo",
        "/slow",
        "/remember",
        "/forget",
        "/quickstart",
    ]
    assert (
        manifest["settings"]["event_subscriptions"]["request_url"]
        == "https://gw.example.com/slack/events"
    )


async def test_agent_commands_named_like_gateway_commands_appear_once() -> None:
    async def handler(ctx: HandlerContext) -> None:
        """Never runs: only the inventory matters here."""

    agent = (
        Command(name="help", description="The agent's help"),
        Command(name="status", description="The agent's status"),
        Command(name="tool", description="Describe a tool", hint="<tool-name>"),
    )
    settings = make_settings(slack_public_url="https://gw.example.test")
    gateway = Gateway(
        settings, EmbeddedRuntime(EntityDefinition("e", handler, slash_commands=agent))
    )
    await gateway.start()
    try:
        menu = gateway.menu()
    finally:
        await gateway.stop()
    assert menu is not None
    manifest = build_manifest(menu, settings)
    # One entry per name; the agent's own are reachable by their alias.
    assert names(manifest) == ["/agent", "/help", "/new", "/cancel", "/agent-help",
                               "/agent-status", "/tool"]  # fmt: skip
    tool = manifest["features"]["slash_commands"][-1]
    assert tool["usage_hint"] == "<tool-name>"  # bracketed once
