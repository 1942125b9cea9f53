"""The app's settings: the gateway's (``CoreSettings``) and every registered channel's, composed
into one model, read from a TOML file, then ``SLASHGATE_*`` environment variables on top.

Fields are flat so that each has one obvious environment name (``telegram_token`` ->
``SLASHGATE_TELEGRAM_TOKEN``). In the TOML file a section flattens into its fields:
``[telegram] token = "..."`` is ``telegram_token``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, get_origin

from pydantic import ValidationError, create_model

from contract import Catalog
from gateway.settings import ENV_PREFIX, CoreSettings, secret_names
from gateway.validation import SettingsRule

from .registry import CHANNELS
from .spelling import spelling


def _composed() -> type[CoreSettings]:
    """One model with every registered channel's fields: each channel's model subclasses
    CoreSettings, and pydantic runs the validators of every base.
    """
    return create_model(
        "Settings",
        __base__=tuple(dict.fromkeys(plug.settings for plug in CHANNELS)),
        __module__=__name__,
        __doc__="The gateway's settings and those of every channel in the registry.",
    )


Settings = _composed()
# The secret settings: each may come from a file instead (``SLASHGATE_TELEGRAM_TOKEN_FILE``,
# ``[telegram] token_file``: the Docker and Kubernetes secrets convention).
SECRETS = secret_names(Settings)
FILE_SUFFIX = "_file"
MAX_SECRET_FILE = 64 * 1024  # bytes: a larger file is not a secret but a mistake


class ConfigError(ValueError):
    """Configuration mistakes, one line each, naming the file, the key as it is written there
    (``[telegram] tokn``) or the environment variable, and the closest valid name.
    """

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def flatten_toml(data: dict[str, Any]) -> dict[str, Any]:
    return _flatten(data, "")[0]


def _flatten(data: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The settings a TOML file sets, how the file spells each (``[telegram] token``), and a
    line for each key that is no setting.
    """
    fields = {**Settings.model_fields}
    fields.update({name + FILE_SUFFIX: fields[name] for name in SECRETS})
    sections = sorted({name.split("_")[0] for name in fields if "_" in name})
    flat: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    problems: list[str] = []
    where = f"{path}: " if path else ""

    def take(name: str, spelling: str, value: Any) -> None:
        if name.endswith(FILE_SUFFIX) and name not in Settings.model_fields:
            # A secret's file: the setting itself, read from the file (``_secret_files``).
            name = name.removesuffix(FILE_SUFFIX)
            if not isinstance(value, str):
                problems.append(f"{where}{spelling} must be a file's path (a string)")
            value = SecretFile(str(value))
        if name in flat:
            problems.append(f"{where}{spelling} is set twice (also as {spelled[name]})")
        flat[name], spelled[name] = value, spelling

    for key, value in data.items():
        if key in fields:
            # A table setting (catalog, acp_env) is named as the table it is written as.
            take(key, f"[{key}]" if isinstance(value, dict) else key, value)
            if key == "catalog" and isinstance(value, dict):
                problems += _unknown_messages(value, where)
        elif isinstance(value, dict) and any(name.startswith(f"{key}_") for name in fields):
            inner_names = [
                name.removeprefix(f"{key}_") for name in fields if name.startswith(f"{key}_")
            ]
            for inner, inner_value in value.items():
                if inner in inner_names:
                    take(f"{key}_{inner}", f"[{key}] {inner}", inner_value)
                else:
                    hint = _closest(inner, inner_names, f"[{key}] {{}}")
                    problems.append(f"{where}[{key}] {inner} is not a setting{hint}")
        elif isinstance(value, dict):
            hint = _closest(key, sections, "[{}]")
            problems.append(f"{where}[{key}] is not a section{hint}")
        else:
            problems.append(f"{where}{key} is not a setting{_closest(key, list(fields), '{}')}")
    return flat, spelled, problems


def _unknown_messages(catalog: dict[str, Any], where: str) -> list[str]:
    known = list(Catalog.model_fields)
    return [
        f"{where}[catalog] {key} is not a message{_closest(key, known, '[catalog] {}')}"
        for key in catalog
        if key not in known
    ]


def _closest(name: str, known: list[str], form: str) -> str:
    """``; did you mean ...?`` with the closest known name in ``form``, or nothing."""
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1)
    return f"; did you mean {form.format(lowered[close[0]])}?" if close else ""


def check_environment(environ: dict[str, str] | os._Environ[str]) -> None:
    """Refuse ``SLASHGATE_*`` variables that are no settings or not JSON of their shape."""
    problems = _environment_problems(environ)
    if problems:
        raise ConfigError(problems)


def _environment_problems(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """A line for each ``SLASHGATE_*`` variable that is no setting (with the closest name) and
    each list or table setting whose value is not JSON of that shape.
    """
    names = {ENV_PREFIX + name.upper(): name for name in Settings.model_fields}
    files = {_file_variable(name): name for name in SECRETS}
    known = [*names, *files, ENV_PREFIX + "CONFIG"]
    given = {variable.upper() for variable in environ}
    problems = []
    for variable, value in environ.items():
        upper = variable.upper()
        if upper in names:
            problems += _json_problems(variable, value, names[upper])
        elif upper in files:
            if ENV_PREFIX + files[upper].upper() in given:
                problems.append(
                    f"{variable} and {ENV_PREFIX + files[upper].upper()} are both set: "
                    "the secret comes from one of them"
                )
        elif upper.startswith(ENV_PREFIX) and upper not in known:
            problems.append(f"{variable} is not a setting{_closest(upper, known, '{}')}")
    return problems


def secret_variables(environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The variables of ``environ`` that give a secret setting, or the file holding one."""
    secret = {ENV_PREFIX + name.upper() for name in SECRETS}
    secret |= {_file_variable(name) for name in SECRETS}
    return [variable for variable in environ if variable.upper() in secret]


def _file_variable(name: str) -> str:
    """``SLASHGATE_TELEGRAM_TOKEN_FILE``: the variable naming the file of a secret setting."""
    return ENV_PREFIX + (name + FILE_SUFFIX).upper()


class SecretFile(str):
    """A secret setting's file, as named (in the TOML file or the environment): read by
    ``_read_secrets`` before the settings are validated.
    """


def _read_secret(name: str, path: str, named: str) -> tuple[Any, str | None]:
    """(the value of secret setting ``name`` read from ``path``, None), or (None, the problem
    in a line naming the file and the setting). The text without its trailing line breaks
    (``echo`` writes one); a table setting (``acp_env``) is JSON there, as in its variable.
    """
    value, problem = _secret_text(path)
    if value is not None and get_origin(Settings.model_fields[name].annotation) is dict:
        try:
            value = json.loads(value)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            value, problem = None, 'not a table in JSON, e.g. {"KEY": "value"}'
    return value, None if problem is None else f"{path}: {problem} (named by {named})"


def _secret_text(path: str) -> tuple[str | None, str | None]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_SECRET_FILE + 1)
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"
    if len(raw) > MAX_SECRET_FILE:
        return None, f"over {MAX_SECRET_FILE // 1024} KiB: not a secret"
    try:
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    return (text, None) if text.strip() else (None, "empty")


def _read_secrets(
    values: dict[str, Any],
    spelled: dict[str, str],
    environ: dict[str, str] | os._Environ[str],
    file: str,
) -> tuple[dict[str, Path], list[str]]:
    """Replace each secret given as a file (``SecretFile`` in ``values``, or a
    ``SLASHGATE_<NAME>_FILE`` variable, which wins) by what the file holds. Returns the files
    read, by setting, and a line for each that cannot be.
    """
    problems: list[str] = []
    read: dict[str, Path] = {}
    variables = {variable.upper(): variable for variable in environ}
    for name in SECRETS:
        variable = variables.get(_file_variable(name))
        if ENV_PREFIX + name.upper() in variables:
            values.pop(name, None)  # the variable wins over the TOML file
            continue
        if variable is not None:
            path, named = environ[variable], variable
        elif isinstance(values.get(name), SecretFile):
            path, named = str(values[name]), f"{file}: {spelled[name]}"
        else:
            continue
        value, problem = _read_secret(name, path, named)
        if problem is not None:
            problems.append(problem)
        else:
            values[name], read[name] = value, Path(path)
    return read, problems


def _json_problems(variable: str, value: str, name: str) -> list[str]:
    shape = get_origin(Settings.model_fields[name].annotation)
    if shape not in (list, dict):
        return []
    example = '["a", "b"]' if shape is list else '{"KEY": "value"}'
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if isinstance(parsed, shape):
        return []
    kind = "a list" if shape is list else "a table"
    return [f"{variable} must be {kind} in JSON, e.g. {variable}='{example}'"]


def _read_toml(path: str | os.PathLike[str], named_by: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file (named by {named_by})"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read it: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    except tomllib.TOMLDecodeError as exc:
        # tomllib (3.11) puts the position in its message only: "... (at line 3, column 7)".
        found = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", str(exc))
        if found is None:
            raise ConfigError([f"{path}: not valid TOML: {exc}"]) from None
        message, line, column = found.groups()
        raise ConfigError([f"{path}:{line}:{column}: not valid TOML: {message}"]) from None


def _named(
    name: str, environ: dict[str, str] | os._Environ[str], file: str, spelled: dict[str, str]
) -> str:
    """A setting as the user gave it: its environment variable (which wins), or its key in the
    file, or its own name.
    """
    variable = ENV_PREFIX + name.upper()
    given = [v for v in environ if v.upper() in (variable, variable + FILE_SUFFIX.upper())]
    if given:
        return given[0]
    if name in spelled:
        return f"{file}: {spelled[name]}"
    return name


def _validation_problems(
    exc: ValidationError,
    environ: dict[str, str] | os._Environ[str],
    file: str | None,
    spelled: dict[str, str],
) -> list[str]:
    said = spelling(list(Settings.model_fields), environ, file, spelled)
    problems = []
    for error in exc.errors():
        cause = (error.get("ctx") or {}).get("error")  # a validator's own ValueError
        message = str(cause) if error["type"] == "value_error" and cause else error["msg"]
        if isinstance(cause, SettingsRule):  # the settings it names, as the user gives them
            message = cause.said(said)
        name, *inside = error["loc"] or ("",)
        if not name:  # a rule over several settings: its message names them
            problems.append(message)
            continue
        where = _named(str(name), environ, str(file), spelled) + "".join(f"[{p!r}]" for p in inside)
        # A table's own check names the key inside it: "[catalog] busy: ...".
        problems.append(f"{where}{' ' if where.endswith(']') and not inside else ': '}{message}")
    return problems


def load_settings(config: str | os.PathLike[str] | None = None, **overrides: Any) -> CoreSettings:
    """Settings from ``config`` (or ``SLASHGATE_CONFIG``), the environment, then overrides.
    Every mistake, in the file or the environment, raises one ``ConfigError``.
    """
    environ = os.environ
    problems = _environment_problems(environ)
    path = config or environ.get("SLASHGATE_CONFIG")
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    if path:
        named_by = "--config" if config else "SLASHGATE_CONFIG"
        try:
            values, spelled, file_problems = _flatten(_read_toml(path, named_by), str(path))
        except ConfigError as exc:
            file_problems = exc.problems
        problems += file_problems
    if problems:  # the values are not checked before the names are right
        raise ConfigError(problems)
    in_clear = tuple(n for n in SECRETS if n in values and not isinstance(values[n], SecretFile))
    secret_files, problems = _read_secrets(values, spelled, environ, str(path))
    if problems:
        raise ConfigError(problems)
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        problems = _validation_problems(exc, environ, str(path) if path else None, spelled)
        raise ConfigError(problems) from None
    named = {name: _named(name, environ, str(path), spelled) for name in Settings.model_fields}
    settings._named = {name: said for name, said in named.items() if said != name}
    settings._config_file = Path(path) if path else None
    settings._secrets_in_config = tuple(
        n for n in in_clear if n in values and n not in secret_files
    )
    settings._secret_files = secret_files
    if overrides:  # command-line flags win over the environment
        settings = settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    return settings
