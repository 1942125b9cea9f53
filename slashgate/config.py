"""The app's settings (``CoreSettings`` and every registered channel's and runtime's, composed
into one model: slashgate/composition.py), read from a TOML file, then an env file's
``SLASHGATE_*`` variables (``slashgate.envfile``), then the environment's on top.

Fields are flat so that each has one obvious environment name (``telegram_token`` ->
``SLASHGATE_TELEGRAM_TOKEN``). In the TOML file a section flattens into its fields:
``[telegram] token = "..."`` is ``telegram_token``.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, get_origin

from pydantic import ValidationError

from contract import Catalog
from gateway.settings import ENV_PREFIX, CoreSettings, secret_names
from gateway.validation import SettingsRule

from .composition import Settings
from .envfile import EnvFile, read_env_file
from .secret_files import SecretFile, read_secret
from .spelling import spelling

# The secret settings: each may come from a file instead (``SLASHGATE_TELEGRAM_TOKEN_FILE``,
# ``[telegram] token_file``: the Docker and Kubernetes secrets convention).
SECRETS = secret_names(Settings)
FILE_SUFFIX = "_file"
# Where settings come from as variables, the first winning: the environment (named "") and the
# env file (named "<path>: "); each as the prefix its variables are named with, and them.
Layers = Sequence[tuple[str, Mapping[str, str]]]


class ConfigError(ValueError):
    """Configuration mistakes, one line each, naming the file, the key as it is written there
    (``[telegram] tokn``) or the environment variable, and the closest valid name.
    """

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config`` and ``--env-file``: where a command's settings come from."""
    parser.add_argument("--config", help="TOML settings file (default: $SLASHGATE_CONFIG)")
    parser.add_argument(
        "--env-file", help="file of SLASHGATE_* variables (default: .env, when it is there)"
    )


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


def check_environment(environ: Mapping[str, str]) -> None:
    """Refuse ``SLASHGATE_*`` variables that are no settings or not JSON of their shape."""
    problems = _environment_problems(environ)
    if problems:
        raise ConfigError(problems)


def _environment_problems(environ: Mapping[str, str]) -> list[str]:
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


def secret_variables(environ: Mapping[str, str]) -> list[str]:
    """The variables of ``environ`` that give a secret setting, or the file holding one."""
    secret = {ENV_PREFIX + name.upper() for name in SECRETS}
    secret |= {_file_variable(name) for name in SECRETS}
    return [variable for variable in environ if variable.upper() in secret]


def _file_variable(name: str) -> str:
    """``SLASHGATE_TELEGRAM_TOKEN_FILE``: the variable naming the file of a secret setting."""
    return ENV_PREFIX + (name + FILE_SUFFIX).upper()


def _read_secrets(
    values: dict[str, Any], spelled: dict[str, str], layers: Layers, file: str
) -> tuple[dict[str, Path], list[str]]:
    """Replace each secret given as a file by what the file holds: as the first layer that
    gives the secret says (``SLASHGATE_<NAME>_FILE``), else as the TOML file does
    (``SecretFile`` in ``values``). Returns the files read, by setting, and a line for each
    that cannot be.
    """
    problems: list[str] = []
    read: dict[str, Path] = {}
    for name in SECRETS:
        given = _giver(name, layers)
        if given is None and isinstance(values.get(name), SecretFile):
            path, named = str(values[name]), f"{file}: {spelled[name]}"
        elif given is None:
            continue
        elif given.as_file:
            path, named = given.variables[given.variable], given.where + given.variable
        else:
            if given.variables is layers[0][1]:  # the environment: pydantic-settings reads it
                values.pop(name, None)
            continue
        table = get_origin(Settings.model_fields[name].annotation) is dict
        value, problem = read_secret(path, named, table)
        if problem is not None:
            problems.append(problem)
        else:
            values[name], read[name] = value, Path(path)
    return read, problems


class Given(NamedTuple):
    """The variable that gives a setting, of the first layer that has one."""

    where: str  # the layer's prefix: "" (the environment) or "<env file>: "
    variables: Mapping[str, str]  # the layer's
    variable: str  # as written: the setting's, or its file's (``_FILE``)
    as_file: bool  # the variable names the file holding the value


def _giver(name: str, layers: Layers) -> Given | None:
    """The variable of the first layer that gives setting ``name``, as its value or its file."""
    wanted = {ENV_PREFIX + name.upper(): False, _file_variable(name): True}
    for where, variables in layers:
        for variable in variables:
            if variable.upper() in wanted:
                return Given(where, variables, variable, wanted[variable.upper()])
    return None


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


def _named(name: str, layers: Layers, file: str, spelled: dict[str, str]) -> str:
    """A setting as the user gave it: its variable in the environment (which wins) or the env
    file, or its key in the TOML file, or its own name.
    """
    given = _giver(name, layers)
    if given is not None:
        return given.where + given.variable
    if name in spelled:
        return f"{file}: {spelled[name]}"
    return name


def _validation_problems(
    exc: ValidationError, layers: Layers, file: str | None, spelled: dict[str, str]
) -> list[str]:
    given = [variable for _, environ in layers for variable in environ]
    said = spelling(list(Settings.model_fields), given, file, spelled)
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
        where = _named(str(name), layers, str(file), spelled) + "".join(f"[{p!r}]" for p in inside)
        # A table's own check names the key inside it: "[catalog] busy: ...".
        problems.append(f"{where}{' ' if where.endswith(']') and not inside else ': '}{message}")
    return problems


def _config_path(
    config: str | os.PathLike[str] | None, layers: Layers
) -> tuple[str | os.PathLike[str] | None, str]:
    """The TOML file to read, and what named it: ``--config``, else ``SLASHGATE_CONFIG``."""
    if config:
        return config, "--config"
    for where, environ in layers:
        if environ.get("SLASHGATE_CONFIG"):
            return environ["SLASHGATE_CONFIG"], where + "SLASHGATE_CONFIG"
    return None, ""


def _toml_in_clear(values: dict[str, Any], layers: Layers) -> tuple[str, ...]:
    """The secrets the TOML file holds in clear (not as a file's path) and no variable gives."""
    return tuple(
        name
        for name in SECRETS
        if name in values
        and not isinstance(values[name], SecretFile)
        and _giver(name, layers) is None
    )


def _variables_in_clear(variables: Mapping[str, str], layers: Layers) -> tuple[str, ...]:
    """The secrets a layer's ``variables`` give in clear (not as a file's path), where it wins."""
    found = []
    for name in SECRETS:
        given = _giver(name, layers)
        if given is not None and given.variables is variables and not given.as_file:
            found.append(name)
    return tuple(found)


def load_settings(
    config: str | os.PathLike[str] | None = None,
    env_file: Path | None = None,
    **overrides: Any,
) -> CoreSettings:
    """Settings from ``config`` (or ``SLASHGATE_CONFIG``), ``env_file``, the environment, then
    overrides. Every mistake, in the files or the environment, raises one ``ConfigError``.
    """
    environ = os.environ
    layers: list[tuple[str, Mapping[str, str]]] = [("", environ)]
    problems = _environment_problems(environ)
    dotenv: EnvFile | None = None
    if env_file is not None:
        dotenv, problem = read_env_file(Settings, env_file)
        problems += [problem] if problem else []
    if dotenv is not None:
        layers.append((f"{dotenv.path}: ", dotenv.variables))
        problems += [f"{dotenv.path}: {p}" for p in _environment_problems(dotenv.variables)]
    path, named_by = _config_path(config, layers)
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    if path:
        try:
            values, spelled, file_problems = _flatten(_read_toml(path, named_by), str(path))
        except ConfigError as exc:
            file_problems = exc.problems
        problems += file_problems
    if problems:  # the values are not checked before the names are right
        raise ConfigError(problems)
    in_clear = {Path(path): _toml_in_clear(values, layers)} if path else {}
    if dotenv is not None:
        values.update(dotenv.settings(Settings))  # over the TOML file's
        in_clear[dotenv.path] = _variables_in_clear(dotenv.variables, layers)
    secret_files, problems = _read_secrets(values, spelled, layers, str(path))
    if problems:
        raise ConfigError(problems)
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        problems = _validation_problems(exc, layers, str(path) if path else None, spelled)
        raise ConfigError(problems) from None
    named = {name: _named(name, layers, str(path), spelled) for name in Settings.model_fields}
    settings._named = {name: said for name, said in named.items() if said != name}
    settings._config_file = Path(path) if path else None
    settings._env_file = dotenv.path if dotenv is not None else None
    settings._secrets_in_clear = {file: names for file, names in in_clear.items() if names}
    settings._secret_files = secret_files
    if overrides:  # command-line flags win over the environment
        settings = settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    return settings
