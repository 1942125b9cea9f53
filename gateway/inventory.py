"""Inventory hygiene: what every listing of a runtime's commands shows (menus, /help,
/v1/commands, the Slack manifest) and what the contract classifies against.

- One entry per name (names compare case-insensitively; the first one wins).
- The gateway's command names belong to the gateway. A runtime command with the same name
  (Gemini's ``help``, fast-agent's ``status``) stays reachable as ``agent-<name>``: it is
  listed under that name, and typed so it reaches the agent as its own ``/<name>``.
- One notation for argument hints everywhere they are shown (/help, menus, Discord's and
  Slack's descriptions, the web chat): ``<name>`` for a required argument, ``[name]`` for an
  optional one, a type other than string after a colon (``<env> [dry_run: boolean]``). A
  runtime's free-form hint is bracketed once: ``tool-name`` and ``<tool-name>`` both read
  ``<tool-name>``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from contract import Command, CommandArgument, ComposerInputPayload, SlashCommandNode

log = logging.getLogger("slashgate.core")

ALIAS_PREFIX = "agent-"


def hygienic(
    commands: Iterable[Command], reserved: Iterable[str]
) -> tuple[tuple[Command, ...], dict[str, str]]:
    """The runtime's commands as listed, and the aliases (listed name -> the agent's name)."""
    commands = tuple(commands)
    reserved_names = {name.lower() for name in reserved}
    names = {c.name.lower() for c in commands}
    seen: set[str] = set()
    listed: list[Command] = []
    aliases: dict[str, str] = {}
    for command in commands:
        key = command.name.lower()
        if key in seen:
            continue
        seen.add(key)
        if key in reserved_names:
            alias = ALIAS_PREFIX + command.name
            if alias.lower() in names or alias.lower() in seen:
                log.warning("the agent's /%s is shadowed by the gateway's", command.name)
                continue
            seen.add(alias.lower())
            aliases[alias.lower()] = command.name
            described = command.description or "The agent's own command"
            command = command.model_copy(
                update={"name": alias, "description": f"{described} (the agent's /{command.name})"}
            )
        listed.append(command)
    return tuple(listed), aliases


def unalias(payload: ComposerInputPayload, aliases: Mapping[str, str]) -> ComposerInputPayload:
    """The payload with every aliased command node named as the agent knows it."""
    if not aliases or not payload.nodes:
        return payload
    nodes = tuple(
        node.model_copy(update={"name": aliases[node.name.lower()]})
        if isinstance(node, SlashCommandNode) and node.name.lower() in aliases
        else node
        for node in payload.nodes
    )
    return payload.model_copy(update={"nodes": nodes})


def arguments_hint(arguments: Iterable[CommandArgument]) -> str | None:
    """Typed arguments as a hint: ``<env> [dry_run: boolean]`` (None: no arguments)."""
    parts = []
    for argument in arguments:
        label = argument.name if argument.type == "string" else f"{argument.name}: {argument.type}"
        parts.append(f"<{label}>" if argument.required else f"[{label}]")
    return " ".join(parts) or None


def usage_hint(hint: str | None) -> str | None:
    """A hint as shown after the name: bracketed once (``query`` -> ``<query>``); one that
    brings its own brackets (``<tool-name>``, ``[summary|<tool-name>]``) stays as it is.
    """
    if hint is None or not hint.strip():
        return None
    hint = hint.strip()
    return hint if any(mark in hint for mark in "<[") else f"<{hint}>"
