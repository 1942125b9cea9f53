"""``slashgate`` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Awaitable
from importlib.metadata import version
from typing import Any

from pydantic import ValidationError

from contract import Command
from gateway import logs, secrecy
from gateway.runtimes import Runtime
from gateway.settings import CoreSettings
from gateway.validation import describe_validation_error

from . import access_cli
from .check import check, described
from .config import ConfigError, add_source_arguments, load_settings, secret_variables
from .envfile import chosen
from .inventory import effective_inventory
from .registry import PlugCommand, build_runtime, plugs, runtime_refusal, settings_as
from .server import Refused, StartError, serve


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535)")
    return port


# All a user needs to start, without the README (a pip install has none).
_EPILOG = """\
start:
  slashgate serve        then open the web chat at http://127.0.0.1:8080/chat, or call
                         the HTTP API: POST http://127.0.0.1:8080/v1/messages with JSON
                         {"conversation": "c1", "user": "me", "text": "/help"}
                         (its description: http://127.0.0.1:8080/openapi.json)
settings:
  a TOML file (--config FILE, or SLASHGATE_CONFIG), then SLASHGATE_<NAME> variables in
  .env (--env-file FILE), then in the environment, which wins: [telegram] token = "..."
  in the file is SLASHGATE_TELEGRAM_TOKEN=... in .env or the environment.
  slashgate check validates them and reaches each platform and the runtime once.
exit status:
  0 done, 1 cannot start or a check failed, 2 bad configuration"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slashgate",
        description=(
            "A sidecar gateway that puts an agent runtime on Telegram, Slack, Discord,\n"
            "a web chat and plain HTTP."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"slashgate {version('slashgate')}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser("serve", help="start the gateway (Ctrl-C stops it)")
    run.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    run.add_argument("--port", type=_port, help="port to listen on (default 8080; 0 picks one)")
    add_source_arguments(run)
    _add_plug_commands(commands)
    access_cli.add_parser(commands)
    verify = commands.add_parser(
        "check",
        help="validate the configuration and reach each platform and the runtime once",
    )
    add_source_arguments(verify)
    return parser


def _add_plug_commands(commands: Any) -> None:
    """``slashgate <plug> <command>``: the commands each channel and runtime brings, as its
    plug in the registry declares them.
    """
    for plug in plugs():
        if plug.cli is None or plug.name is None:
            continue
        group = commands.add_parser(plug.name, help=plug.cli.help)
        own = group.add_subparsers(dest=f"{plug.name}_command", required=True)
        for command in plug.cli.commands:
            parser = own.add_parser(command.name, help=command.help)
            parser.set_defaults(plug=plug, plug_command=command)
            add_source_arguments(parser)


def main(argv: list[str] | None = None, runtime: Runtime | None = None) -> int:
    """The command line; ``runtime`` replaces the configured one (``Bot.run``)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        settings = load_settings(
            args.config,
            chosen(args.env_file),
            host=getattr(args, "host", None),
            port=getattr(args, "port", None),
        )
        if args.command == "access":
            if mistake := access_cli.problem(args, settings):
                raise ConfigError([mistake])
        # Read: out of the environment, and the process out of reach (gateway/secrecy.py),
        # before any agent starts.
        sealed = secrecy.seal(secret_variables(os.environ))
        command: PlugCommand[Any] | None = getattr(args, "plug_command", None)
        if command is not None and command.problem is not None:  # before a runtime starts
            if problem := command.problem(settings_as(args.plug.settings, settings)):
                raise ConfigError([problem])
        # A backend checks its own settings when built: a mistake there is configuration too.
        if runtime is None and args.command != "access":  # access needs the store only
            runtime = build_runtime(settings)
            if args.command == "serve" and (problem := runtime_refusal(settings)):
                raise ConfigError([problem])
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"slashgate: bad configuration: {problem}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        print(f"slashgate: bad configuration: {describe_validation_error(exc)}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"slashgate: bad configuration: {exc}", file=sys.stderr)
        return 2
    logs.configure(settings)
    if args.command == "access":
        return access_cli.run(args, settings)
    assert runtime is not None  # built above for every other command
    if not sealed and sys.platform.startswith("linux"):
        logging.getLogger("slashgate").warning(
            "could not make the process non-dumpable: processes of the same user can read "
            "its environment and memory (docs/security.md)"
        )
    if args.command == "check":
        return asyncio.run(check(settings, runtime))
    if args.command == "serve":
        try:
            asyncio.run(serve(settings, runtime))
        except Refused as exc:  # /v1 open to anyone: the settings must change
            print(f"slashgate: bad configuration: {exc}", file=sys.stderr)
            return 2
        except StartError as exc:
            # The cause's notes say more (an agent's last stderr lines, say).
            said = described(exc.__cause__) if exc.__cause__ else str(exc)
            print(f"slashgate: cannot start: {said}", file=sys.stderr)
            return 1
    elif command is not None:
        return _run(args.plug.name, command, settings_as(args.plug.settings, settings), runtime)
    return 0


def _run(plug: str, command: PlugCommand[Any], settings: CoreSettings, runtime: Runtime) -> int:
    """A plug's command, given its settings and the inventory its menu would list."""

    def inventory() -> Awaitable[tuple[Command, ...]]:
        return effective_inventory(settings, runtime, plug, command.name)

    return asyncio.run(command.run(settings, inventory))
