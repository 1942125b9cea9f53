"""The channels the app serves and the runtimes it can run, each a plug: its settings model
(composed into the app's ``Settings``: slashgate/composition.py), what it builds, what keeps
the gateway from starting, if anything does, and the commands it brings to the command line
(``slashgate slack manifest``), if any. Adding a channel is its folder and one line in
``CHANNELS``; adding a runtime, its folder under gateway/runtimes/ and one line in
``RUNTIMES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from channels.discord import cli as discord_cli
from channels.discord import settings as discord
from channels.matrix import settings as matrix
from channels.slack import cli as slack_cli
from channels.slack import settings as slack
from channels.telegram import settings as telegram
from channels.webchat import settings as webchat
from channels.webhook import settings as webhook
from channels.webhook.exposure import open_webhook_refusal
from contract import Command
from gateway.access import Policy
from gateway.api import Channel
from gateway.core import Gateway
from gateway.runtimes import SPEC, Runtime, load_runtime
from gateway.runtimes.acp import settings as acp
from gateway.runtimes.electric import settings as electric
from gateway.runtimes.pi import settings as pi
from gateway.runtimes.workspace import AgentSettings
from gateway.settings import CoreSettings

S = TypeVar("S", bound=CoreSettings)
# What a plug's command is given to learn the commands a menu lists.
Inventory = Callable[[], Awaitable[tuple[Command, ...]]]


def settings_as(model: type[S], settings: CoreSettings) -> S:
    """The app's settings typed as one plug's ``model``, which they subclass."""
    if not isinstance(settings, model):
        raise TypeError(f"{type(settings).__name__} is no {model.__name__}")
    return settings


def imported(spec: str) -> Any:
    """What ``"module:name"`` names, imported now."""
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class PlugCommand(Generic[S]):
    """``slashgate <plug> <name>``: a command a channel or a runtime brings to the command
    line, with ``--config`` and ``--env-file``.
    """

    name: str
    help: str
    # Given the plug's settings and ``inventory()``, the commands a menu lists (the runtime
    # started for them, then stopped), it does its work and returns the exit status. What
    # takes long to import (hikari) is imported inside it: every command line imports this.
    run: Callable[[S, Inventory], Coroutine[Any, Any, int]]
    # What keeps it from running with these settings (None: it may), asked before the runtime
    # is built: a line of "bad configuration".
    problem: Callable[[S], str | None] | None = None


@dataclass(frozen=True)
class Cli(Generic[S]):
    """A plug's commands, in a group named after the plug: ``help`` is the group's line in
    ``slashgate --help``.
    """

    help: str
    commands: tuple[PlugCommand[S], ...]


@dataclass(frozen=True)
class Plug(Generic[S]):
    settings: type[S]
    enabled: Callable[[S], bool]
    # "module:Class", imported only when the channel is on: aiogram alone takes seconds and
    # a hundred megabytes that a gateway without Telegram should not pay.
    channel: str
    # Why the gateway must not start with these settings (None: it may), asked before
    # anything starts: the webhook's refusal to serve /v1 open to anyone.
    refusal: Callable[[S], str | None] | None = None
    # "chat": its senders are platform users, and the access policy of its settings
    # (gateway.access.access_settings) decides who talks; deny by default for a new channel.
    # "token": reached with the gateway's token (the webhook, the web chat).
    access: Literal["chat", "token"] = "chat"
    # A chat channel's name, for ``slashgate access`` (which imports no channel to learn it),
    # and a channel's with commands, for their group.
    name: str | None = None
    cli: Cli[S] | None = None

    def __post_init__(self) -> None:
        if self.cli is not None and self.name is None:
            raise ValueError(f"{self.channel}: a plug with commands needs a name for their group")

    def refuses(self, settings: CoreSettings) -> str | None:
        return _refusal(self.refusal, self.settings, settings)

    def build(self, gateway: Gateway, settings: CoreSettings) -> Channel | None:
        """The channel, or None when the settings leave it off."""
        own = settings_as(self.settings, settings)
        if not self.enabled(own):
            return None
        made: Channel = imported(self.channel)(gateway, own)
        gateway.access.configure(made.name, Policy.of(own, made.name, self.access == "chat"))
        return made


CHANNELS: tuple[Plug[Any], ...] = (
    Plug(
        webhook.WebhookSettings,
        webhook.enabled,
        "channels.webhook.channel:WebhookChannel",
        open_webhook_refusal,
        access="token",
    ),
    Plug(
        webchat.WebchatSettings,
        webchat.enabled,
        "channels.webchat.channel:WebchatChannel",
        access="token",
    ),
    Plug(
        telegram.TelegramSettings,
        telegram.enabled,
        "channels.telegram.channel:TelegramChannel",
        name="telegram",
    ),
    Plug(
        slack.SlackSettings,
        slack.enabled,
        "channels.slack.channel:SlackChannel",
        name="slack",
        cli=Cli(
            "Slack channel tools",
            (
                PlugCommand(
                    "manifest",
                    "print the Slack app manifest (JSON) for the effective inventory",
                    slack_cli.manifest,
                    slack_cli.manifest_problem,
                ),
            ),
        ),
    ),
    Plug(
        discord.DiscordSettings,
        discord.enabled,
        "channels.discord.channel:DiscordChannel",
        name="discord",
        cli=Cli(
            "Discord channel tools",
            (
                PlugCommand(
                    "sync",
                    "publish the application commands for the effective inventory now",
                    discord_cli.sync,
                    discord_cli.sync_problem,
                ),
            ),
        ),
    ),
    Plug(
        matrix.MatrixSettings,
        matrix.enabled,
        "channels.matrix.channel:MatrixChannel",
        name="matrix",
    ),
)


def chat_channels() -> list[str]:
    """The channels whose senders the access policy checks, by name."""
    return [plug.name for plug in CHANNELS if plug.access == "chat" and plug.name]


def refusal(settings: CoreSettings) -> str | None:
    """Why the gateway must not start as configured (the first channel's reason), or None."""
    return next(filter(None, (plug.refuses(settings) for plug in CHANNELS)), None)


def build_channels(gateway: Gateway, settings: CoreSettings) -> list[Channel]:
    """Every channel the settings turn on, in ``CHANNELS``' order (the webhook's always is)."""
    built = (plug.build(gateway, settings) for plug in CHANNELS)
    return [channel for channel in built if channel is not None]


@dataclass(frozen=True)
class RuntimePlug(Generic[S]):
    name: str  # the ``runtime`` setting that chooses it
    settings: type[S]
    # "module:callable", given the settings, that returns the Runtime: imported only when the
    # runtime is chosen (the ACP SDK alone takes seconds).
    runtime: str
    # Why ``slashgate serve`` must not start with these settings (None: it may), asked before
    # anything starts: the ACP agent's program missing.
    refusal: Callable[[S], str | None] | None = None
    cli: Cli[S] | None = None

    def refuses(self, settings: CoreSettings) -> str | None:
        return _refusal(self.refusal, self.settings, settings)

    def build(self, settings: CoreSettings) -> Runtime:
        made: Runtime = imported(self.runtime)(settings_as(self.settings, settings))
        return made


def _refusal(
    refusal: Callable[[S], str | None] | None, model: type[S], settings: CoreSettings
) -> str | None:
    return refusal(settings_as(model, settings)) if refusal else None


RUNTIMES: tuple[RuntimePlug[Any], ...] = (
    RuntimePlug("embedded", CoreSettings, "gateway.runtimes.embedded.demo:demo_runtime"),
    RuntimePlug("acp", acp.AcpSettings, "gateway.runtimes.acp.runtime:AcpRuntime", acp.refusal),
    RuntimePlug("pi", pi.PiSettings, "gateway.runtimes.pi.runtime:PiRuntime"),
    RuntimePlug(
        "electric", electric.ElectricSettings, "gateway.runtimes.electric.runtime:ElectricRuntime"
    ),
)


def plugs() -> tuple[Plug[Any] | RuntimePlug[Any], ...]:
    """Every channel's plug, then every runtime's."""
    return (*CHANNELS, *RUNTIMES)


def runtime_plug(name: str) -> RuntimePlug[Any] | None:
    """The runtime ``runtime = name`` chooses in ``RUNTIMES``; None for any other name."""
    return next((plug for plug in RUNTIMES if plug.name == name), None)


def unknown_runtime(name: str) -> str | None:
    """Why ``runtime = name`` names no runtime, with the ones it may name; None when it names
    one (a user's own ``package.module:name`` is found when it is built).
    """
    if runtime_plug(name) is not None or SPEC.fullmatch(name):
        return None
    known = ", ".join(plug.name for plug in RUNTIMES)
    return f'must be {known} or "package.module:name" of your own'


def build_runtime(settings: CoreSettings) -> Runtime:
    """The runtime the settings choose: a plug's, or the user's own (``load_runtime``)."""
    plug = runtime_plug(settings.runtime)
    if plug is not None:
        return plug.build(settings)
    if problem := unknown_runtime(settings.runtime):
        raise ValueError(f"runtime: {settings.runtime!r} {problem}")
    return load_runtime(settings.runtime)


def runtime_refusal(settings: CoreSettings) -> str | None:
    """Why ``slashgate serve`` must not start the chosen runtime, or None."""
    plug = runtime_plug(settings.runtime)
    return plug.refuses(settings) if plug is not None else None


def agent_runtime(settings: CoreSettings) -> str | None:
    """The chosen runtime's name when it starts an agent program on this machine (its
    settings are ``AgentSettings``: ``acp``, ``pi``), else None.
    """
    plug = runtime_plug(settings.runtime)
    return plug.name if plug is not None and issubclass(plug.settings, AgentSettings) else None
