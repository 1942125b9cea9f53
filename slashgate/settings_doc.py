"""docs/configuration.md, made from the settings models: every setting with its key in the
TOML file, its environment variable, its type, its default and its description (the docstring
under the field, or the field's own ``description``). ``python -m slashgate.settings_doc >
docs/configuration.md`` writes it again; tests/test_configuration_doc.py fails while the page
and the models differ.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import textwrap
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from gateway.access.settings import KEYS as ACCESS_KEYS
from gateway.settings import ENV_PREFIX

from .config import FILE_SUFFIX, SECRETS, Settings

# The TOML sections of the page, in its order: (title, guide). Settings whose name starts with
# none of these are top-level keys.
SECTIONS = {
    "webhook": ("HTTP API (webhook)", "http-api.md"),
    "telegram": ("Telegram", "telegram.md"),
    "slack": ("Slack", "slack.md"),
    "discord": ("Discord", "discord.md"),
    "matrix": ("Matrix", "matrix.md"),
    "redis": ("Redis store", "reliability.md"),
    "attachment": ("Attachments", "attachments.md"),
    "acp": ("ACP runtime", "runtimes.md"),
    "pi": ("pi runtime", "runtimes.md"),
    "electric": ("Electric runtime", "electric.md"),
}

_HEAD = """\
# Configuration reference

<!-- Made by `python -m slashgate.settings_doc > docs/configuration.md` from the settings
models; edit the docstrings under the fields there, not this page. -->

Every setting of the gateway and its channels. They are read from a TOML file
(`slashgate serve --config FILE`, or `SLASHGATE_CONFIG=FILE`), then from the `SLASHGATE_*`
variables of an env file (`.env` in the folder `slashgate` starts in, or `--env-file FILE`),
then from `SLASHGATE_*` environment variables; each wins over the ones before it, and `--host`
and `--port` win over all.
[examples/slashgate.toml](../examples/slashgate.toml) is a file with every setting at its
default.

- In the file, a section flattens into its keys: `[telegram] token = "..."` is the setting
  `telegram_token`, which may also be written `telegram_token = "..."` at the top.
- In the environment, a setting is `SLASHGATE_` and its name in capitals
  (`SLASHGATE_TELEGRAM_TOKEN`); lists and tables are JSON
  (`SLASHGATE_INTERACTIVE_ONLY='["settings"]'`).
- A secret (marked *Secret.*) may instead come from a file of its own: its key with `_file`
  (`[telegram] token_file = "/run/secrets/tg"`) or its variable with `_FILE`
  (`SLASHGATE_TELEGRAM_TOKEN_FILE=/run/secrets/tg`); [security.md](security.md#secrets-from-files).
- Every mistake (an unknown name, a wrong value, a channel set only in part) stops the start
  with exit status 2 and one line naming the setting as you wrote it; `slashgate check`
  validates the settings and reaches each part once without serving.
"""


def descriptions(model: type[BaseModel] = Settings) -> dict[str, str]:
    """Each setting's description, on one line: the field's ``description``, else the string
    under the field in the source of the class that declares it ("" for neither).
    """
    under: dict[str, str] = {}
    for cls in reversed(model.__mro__):  # a subclass's own docstring wins
        if cls.__module__.split(".")[0] in ("gateway", "channels", "slashgate"):
            under.update(_docstrings(cls))
    return {
        name: " ".join((field.description or under.get(name, "")).split())
        for name, field in model.model_fields.items()
    }


def _docstrings(cls: type) -> dict[str, str]:
    """The string after each annotated name of the class body; none for a class made at run
    time (``create_model``), which has no source.
    """
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    tree = ast.parse(source).body[0]
    if not isinstance(tree, ast.ClassDef):
        return {}
    found = {}
    for field, text in pairwise(tree.body):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(text, ast.Expr)
            and isinstance(text.value, ast.Constant)
            and isinstance(text.value.value, str)
        ):
            found[field.target.id] = text.value.value
    return found


def render() -> str:
    """The whole page."""
    grouped: dict[str, list[str]] = {"": [], **{section: [] for section in SECTIONS}}
    for name in Settings.model_fields:
        grouped[_section(name)].append(name)
    parts = [_HEAD, "## Top level\n\n" + _table(grouped.pop(""), "")]
    for section, names in grouped.items():
        title, guide = SECTIONS[section]
        # A chat channel's own settings first, then who may talk on it.
        access = [name for name in names if name.removeprefix(f"{section}_") in ACCESS_KEYS]
        who = " Who may talk: [access.md](access.md)." if access else ""
        parts.append(
            f"## {title}\n\nSection `[{section}]`, variables `{ENV_PREFIX}{section.upper()}_*`; "
            f"the guide: [{guide}]({guide}).{who}\n\n"
            + _table([name for name in names if name not in access] + access, section)
        )
    return "\n".join(parts)


def _section(name: str) -> str:
    prefix = name.split("_", 1)[0]
    return prefix if prefix in SECTIONS and prefix != name else ""


def _table(names: list[str], section: str) -> str:
    rows = [
        "| key | environment variable | type | default | description |",
        "|---|---|---|---|---|",
    ]
    described = descriptions()
    for name in names:
        field = Settings.model_fields[name]
        key = name.removeprefix(f"{section}_") if section else name
        variable = ENV_PREFIX + name.upper()
        description = described[name]
        if name in SECRETS:
            key = f"`{key}` or `{key}{FILE_SUFFIX}`"
            variable = f"`{variable}` or `{variable}{FILE_SUFFIX.upper()}`"
            description = f"*Secret.* {description}"
        else:
            key, variable = f"`{key}`", f"`{variable}`"
        cells = [key, variable, _type(field), _default(field), description]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def _type(field: FieldInfo) -> str:
    kind = _kind(field.annotation)
    bounds = [
        f"{symbol} {getattr(rule, attr)}"
        for rule in field.metadata
        for cls, attr, symbol in _BOUNDS
        if isinstance(rule, cls)
    ]
    return ", ".join([kind, *bounds])


_BOUNDS = (
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.Le, "le", "≤"),
)


def _kind(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        *others, last = [f"`{value}`" for value in args]
        return f"{', '.join(others)} or {last}" if others else last
    if origin is Union or (args and type(None) in args):
        return _kind(next(arg for arg in args if arg is not type(None)))
    if origin in (list, tuple):
        return f"list of {_kind(args[0])}s"
    if origin is dict:
        return "table"
    if origin is not None and args:  # Annotated: the type it annotates
        return _kind(args[0])
    if annotation is SecretStr:
        return "string"
    names = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "path"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: FieldInfo) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    return f"`{json.dumps(_plain(value), ensure_ascii=False)}`"


def _plain(value: Any) -> Any:
    """The default as it is written in TOML (JSON is the same for these values)."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


if __name__ == "__main__":
    sys.stdout.write(render())
