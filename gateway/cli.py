"""``slashgate`` command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys

from pydantic import ValidationError

from .config import load_settings
from .runtimes import build_runtime
from .server import StartError, serve


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535)")
    return port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slashgate", description="A multi-channel bot gateway.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="start the gateway")
    run.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    run.add_argument("--port", type=_port, help="port to listen on (default 8080; 0 picks one)")
    run.add_argument("--config", help="TOML settings file (default: $SLASHGATE_CONFIG)")
    slack = commands.add_parser("slack", help="Slack channel tools")
    slack_commands = slack.add_subparsers(dest="slack_command", required=True)
    manifest = slack_commands.add_parser(
        "manifest", help="print the Slack app manifest (JSON) for the effective inventory"
    )
    manifest.add_argument("--config", help="TOML settings file (default: $SLASHGATE_CONFIG)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = load_settings(
            args.config, host=getattr(args, "host", None), port=getattr(args, "port", None)
        )
        # A backend checks its own settings when built: a mistake there is configuration too.
        runtime = build_runtime(settings)
    except (ValidationError, OSError, ValueError) as exc:
        print(f"slashgate: bad configuration: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command == "serve":
        try:
            asyncio.run(serve(settings, runtime))
        except StartError as exc:
            print(f"slashgate: cannot start: {exc}", file=sys.stderr)
            return 1
    elif args.command == "slack":
        from channels.slack.manifest import build_manifest, effective_inventory

        commands = asyncio.run(effective_inventory(settings))
        print(json.dumps(build_manifest(commands, settings), indent=2, ensure_ascii=False))
    return 0
