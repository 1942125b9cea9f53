"""Who may talk on a chat channel: one settings shape for every channel, its fields named after
the channel (``[telegram] dm_policy`` is ``telegram_dm_policy``, ``SLASHGATE_TELEGRAM_DM_POLICY``).
A channel's settings model subclasses ``access_settings(name, ids)``; docs/access.md has each.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import Field, create_model, field_validator

from ..settings import CoreSettings

DM_POLICIES = ("pairing", "allowlist", "open", "disabled")
GROUP_POLICIES = ("allowlist", "open", "disabled")
GROUP_MEMBERS = ("anyone", "allowlist")
# Fields with a closed set of values, and their defaults: deny by default.
_CHOICES = {
    "dm_policy": (DM_POLICIES, "pairing"),
    "group_policy": (GROUP_POLICIES, "allowlist"),
    "group_members": (GROUP_MEMBERS, "anyone"),
}
_ID_LISTS = ("allow_users", "allow_groups", "owners")
# Each field's description (docs/configuration.md), the same on every chat channel.
_DESCRIPTIONS = {
    "dm_policy": "Direct messages: `pairing` (a stranger gets a code to approve), `allowlist` "
    "(strangers are ignored), `open` (anyone) or `disabled` (no one, owners included).",
    "group_policy": "Groups: `allowlist` (listed and approved groups only), `open` (any group "
    "the bot is in) or `disabled`.",
    "group_members": "In an allowed group: `anyone` talks, or only allowed users and owners "
    "(`allowlist`).",
    "allow_users": "User ids allowed besides those approved at run time (`slashgate access`).",
    "allow_groups": "Group ids allowed besides those approved at run time.",
    "owners": "Owners' user ids: they alone run `/mode`, `/pair`, `/new` in groups and "
    "`owner_commands`.",
    "owner_commands": 'More owner-only commands, by name or pattern (`"skill:*"`).',
}
KEYS = tuple(_DESCRIPTIONS)  # each chat channel's access settings, without its prefix
# By channel: what ``slashgate access`` checks an id against.
IDS_OF: dict[str, Ids] = {}
_COMMAND = re.compile(r"[A-Za-z0-9_*?:\[\]. -]{1,64}")
_MENTION = re.compile(r"<[@#!&]*([^|>]+)(?:\|[^>]*)?>")  # <@id>, <#id|name>, <@!id>


@dataclass(frozen=True, slots=True)
class Ids:
    """A platform's immutable ids: the pattern every id matches, and how the error says it."""

    pattern: re.Pattern[str]
    what: str  # "a Telegram user or chat id (a whole number)"

    def closest(self, text: str) -> str | None:
        """The id a mistyped one most likely meant: the id in a mention as the platforms
        write them (``<@U024BE7LH>``, ``<#C024BE91L|general>``), or upper-cased (Slack's
        ids); None when nothing near is one.
        """
        mention = _MENTION.fullmatch(text)
        bare = mention.group(1) if mention else text
        for candidate in (bare, bare.upper()):
            if candidate != text and self.pattern.fullmatch(candidate):
                return candidate
        return None


def access_settings(channel: str, ids: Ids) -> type[CoreSettings]:
    """The access fields of ``channel`` as a settings model to subclass."""

    def choice(cls: type, value: Any, info: Any) -> str:
        options, _ = _CHOICES[info.field_name.removeprefix(f"{channel}_")]
        if value in options:
            return str(value)
        close = difflib.get_close_matches(str(value).lower(), options, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"must be one of {', '.join(options)} (got {value!r}){hint}")

    def id_list(cls: type, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise ValueError("must be a list of ids")
        found = []
        for item in value:
            text = str(item).strip() if isinstance(item, int | str) else None
            if isinstance(item, bool) or text is None or not ids.pattern.fullmatch(text):
                close = ids.closest(text) if text is not None else None
                hint = f"; did you mean {close!r}?" if close else ""
                raise ValueError(f"{item!r} is not {ids.what}{hint}")
            found.append(text)
        return found

    def commands(cls: type, value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("must be a list of command names or patterns (e.g. 'skill:*')")
        for item in value:
            if not _COMMAND.fullmatch(item.lstrip("/")):
                raise ValueError(f"{item!r} is not a command name or pattern")
        return [item.lstrip("/").lower() for item in value]

    fields: dict[str, Any] = {
        f"{channel}_{k}": (str, Field(d, description=_DESCRIPTIONS[k]))
        for k, (_, d) in _CHOICES.items()
    }
    for name in KEYS[len(_CHOICES) :]:
        fields[f"{channel}_{name}"] = (list[str], Field([], description=_DESCRIPTIONS[name]))
    # Validator names carry the channel: a model composed of several channels keeps each.
    validators: dict[str, Callable[..., Any]] = {
        f"_{channel}_access_choice": field_validator(
            *(f"{channel}_{k}" for k in _CHOICES), mode="before"
        )(choice),
        f"_{channel}_access_ids": field_validator(
            *(f"{channel}_{k}" for k in _ID_LISTS), mode="before"
        )(id_list),
        f"_{channel}_access_commands": field_validator(f"{channel}_owner_commands", mode="before")(
            commands
        ),
    }
    model = create_model(
        f"{channel.capitalize()}Access",
        __base__=CoreSettings,
        __module__=__name__,
        __validators__=validators,
        **fields,
    )
    IDS_OF[channel] = ids
    return model
