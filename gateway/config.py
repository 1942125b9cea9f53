"""One settings model: a TOML file, then ``SLASHGATE_*`` environment variables on top.

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
from typing import Any, Literal, get_origin

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from contract import Catalog

from .validation import describe_validation_error

ENV_PREFIX = "SLASHGATE_"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
RUNTIMES = ("embedded", "acp", "pi", "electric")
SqliteSynchronous = Literal["full", "normal"]  # PRAGMA synchronous of the SQLite store
_RUNTIME_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


class Settings(BaseSettings):
    # Errors name the field and the rule, not the input: that may hold tokens and API keys.
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", hide_input_in_errors=True
    )

    # server
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    # Where clients reach the port when that is not host (a container's published address;
    # compose.yaml passes it): the open-webhook check looks at it (gateway/exposure.py).
    published_host: str | None = None
    log_level: str = "INFO"  # DEBUG, INFO, WARNING, ERROR or CRITICAL
    log_format: Literal["text", "json"] = "text"

    # core
    runtime: str = "embedded"  # embedded, acp, pi, electric or "package.module:name"
    run_timeout: float = Field(120.0, gt=0)
    busy_policy: Literal["queue", "reject", "interrupt"] = "queue"
    max_queue: int = Field(10, ge=0)
    inventory_wait: float = Field(5.0, ge=0)
    open_timeout: float = Field(120.0, gt=0)  # a runtime session's open; then it is retried
    cancel_grace: float = Field(5.0, gt=0)
    max_sessions: int = Field(10_000, ge=1)
    interactive_only: list[str] = ["settings", "hotkeys", "theme", "themes"]
    catalog: dict[str, str] = {}
    show_reasoning: Literal["collapsed", "off"] = "collapsed"  # the agent's thoughts in chats

    # state: the inbound journal, dedupe, runtime session ids (see docs/reliability.md)
    store: Literal["memory", "sqlite", "redis"] = "sqlite"
    state_path: Path = Path("slashgate-state.sqlite3")
    # "full": an acknowledged input survives a power cut; "normal" (WAL): a crash of the
    # process only, for about a quarter less CPU per message (docs/reliability.md).
    sqlite_synchronous: SqliteSynchronous = "full"
    memory_store_size: int = Field(10_000, ge=1)  # keys; the least recently used go first
    sqlite_state_size: int = Field(100_000, ge=1)  # keys in state_path; the same rule
    redis_url: SecretStr | None = None  # redis://host:port/db (may hold a password)
    redis_prefix: str = "slashgate:"
    dedupe_size: int = Field(100_000, ge=1)  # platform ids and Idempotency-Keys remembered
    dedupe_ttl: float = Field(86_400.0, gt=0)  # seconds: Telegram redelivers for 24 hours
    recovery: Literal["notify", "rerun"] = "notify"  # a turn cut short by a crash
    replica_id: str | None = None  # stable name of this process among replicas
    lease_ttl: float = Field(10.0, gt=0)  # seconds a dead replica's conversations wait

    # webhook channel
    webhook_token: SecretStr | None = None
    webhook_allow_public: bool = False  # no token on a non-loopback address, on purpose
    webhook_max_body: int = Field(1024 * 1024, ge=1)
    idempotency_size: int = Field(10_000, ge=1)
    idempotency_ttl: float = Field(3600.0, gt=0)

    # Slack and Telegram Web API calls: seconds one attempt may take (then it is retried
    # where the reply must arrive; see docs/reliability.md)
    platform_timeout: float = Field(30.0, gt=0)
    # attachments, from every channel (docs/attachments.md)
    attachment_max_bytes: int = Field(20_000_000, ge=1)  # per file
    attachment_max_total: int = Field(50_000_000, ge=1)  # all the files of one message
    attachment_fetch_timeout: float = Field(30.0, gt=0)  # seconds to download one file
    # Tests only: lets the webhook fetch http:// and loopback/private addresses.
    attachment_allow_private_urls: bool = False
    # web chat channel: the page at /chat (it talks to the webhook's /v1 API)
    webchat: bool = True

    # telegram channel
    telegram_token: SecretStr | None = None
    telegram_secret: SecretStr | None = None
    telegram_mode: Literal["webhook", "polling"] = "webhook"
    telegram_api_base: str = "https://api.telegram.org"
    telegram_group_text: Literal["mention", "all"] = "mention"
    telegram_webhook_url: str | None = None  # public URL of /telegram/webhook, set at start
    telegram_edit_interval: float = Field(1.0, gt=0)  # seconds between edits of one chat
    telegram_media_group_wait: float = Field(1.0, ge=0)  # seconds an album waits for its items

    # slack channel
    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_base: str = "https://slack.com/api/"
    slack_umbrella_command: str = "agent"
    slack_public_url: str | None = None  # the gateway's public base URL, for the manifest

    # acp runtime: any Agent Client Protocol agent over stdio
    acp_command: list[str] = []
    acp_cwd: Path = Path(".")
    acp_env: dict[str, SecretStr] = {}  # API keys, often: revealed only to the child
    acp_auth_method: str | None = None

    # pi runtime: `pi --mode rpc`, one process per conversation
    pi_command: list[str] = ["pi", "--mode", "rpc"]
    pi_cwd: Path = Path(".")
    pi_env: dict[str, SecretStr] = {}
    pi_pool_size: int = Field(8, ge=1)
    pi_idle_ttl: float = Field(600.0, gt=0)

    # electric runtime: an Electric Agents server over HTTP
    electric_url: str = "http://127.0.0.1:4437"
    electric_entity_type: str = "assistant"
    electric_id_prefix: str = "slashgate"
    electric_principal: str | None = None
    electric_live: Literal["sse", "long-poll"] = "sse"

    # How the user wrote each setting given in a file or the environment (``named``).
    _named: dict[str, str] = PrivateAttr(default_factory=dict)

    def named(self, name: str) -> str:
        """The setting ``name`` as the user gave it: ``slashgate.toml: [acp] command``,
        ``SLASHGATE_ACP_COMMAND``, or ``name`` itself.
        """
        return self._named.get(name, name)

    @model_validator(mode="after")
    def _telegram_webhook_has_a_secret(self) -> Settings:
        if self.telegram_token and self.telegram_mode == "webhook" and not self.telegram_secret:
            raise ValueError(
                "telegram_secret is not set: Telegram webhook mode needs it "
                "(SLASHGATE_TELEGRAM_SECRET, the secret_token given to setWebhook); "
                "or set telegram_mode = polling"
            )
        return self

    @model_validator(mode="after")
    def _channels_are_wholly_set(self) -> Settings:
        # A half-set channel would be silently off: say which setting is missing instead.
        # (slack_app_token alone is fine: it is set before the app exists, for its manifest.)
        slack = ("slack_bot_token", "slack_signing_secret")
        if any(getattr(self, name) for name in slack):
            for name in slack:
                if not getattr(self, name):
                    raise ValueError(
                        f"{name} is not set: the Slack channel needs slack_bot_token and "
                        f"slack_signing_secret (SLASHGATE_{name.upper()})"
                    )
        if not self.telegram_token:
            for name in ("telegram_secret", "telegram_webhook_url"):
                if getattr(self, name):
                    raise ValueError(
                        f"{name} is set but telegram_token is not: the Telegram channel needs "
                        "its bot token (SLASHGATE_TELEGRAM_TOKEN)"
                    )
        if self.telegram_webhook_url and self.telegram_mode == "polling":
            raise ValueError(
                'telegram_webhook_url is set but telegram_mode is "polling": the URL is for '
                'webhook mode only; remove it or set telegram_mode = "webhook"'
            )
        return self

    @model_validator(mode="after")
    def _redis_has_a_url(self) -> Settings:
        if self.store == "redis" and self.redis_url is None:
            raise ValueError('store = "redis" needs SLASHGATE_REDIS_URL (redis://host:port/db)')
        return self

    @field_validator("catalog")
    @classmethod
    def _catalog_is_valid(cls, value: dict[str, str]) -> dict[str, str]:
        # An unknown key is a typo, a wrong placeholder a failed reply: refuse both now.
        try:
            Catalog(**value)
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc)) from None
        return value

    @field_validator("slack_public_url")
    @classmethod
    def _public_url_is_https(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("https://"):
            raise ValueError("must be the gateway's public https:// URL (Slack posts only there)")
        return value

    @field_validator("log_level")
    @classmethod
    def _log_level_exists(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError("must be one of " + ", ".join(LOG_LEVELS))
        return value.upper()

    @field_validator("runtime")
    @classmethod
    def _runtime_is_named(cls, value: str) -> str:
        if value not in RUNTIMES and not _RUNTIME_SPEC.fullmatch(value):
            raise ValueError(
                "must be " + ", ".join(RUNTIMES) + ' or "package.module:name" of your own'
            )
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment over the file (which arrives as init arguments).
        return (env_settings, init_settings)


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
    fields = Settings.model_fields
    sections = sorted({name.split("_")[0] for name in fields if "_" in name})
    flat: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    problems: list[str] = []
    where = f"{path}: " if path else ""

    def take(name: str, spelling: str, value: Any) -> None:
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
    known = [*names, ENV_PREFIX + "CONFIG"]
    problems = []
    for variable, value in environ.items():
        upper = variable.upper()
        if upper in names:
            problems += _json_problems(variable, value, names[upper])
        elif upper.startswith(ENV_PREFIX) and upper not in known:
            problems.append(f"{variable} is not a setting{_closest(upper, known, '{}')}")
    return problems


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
    given = [v for v in environ if v.upper() == variable]
    if given:
        return given[0]
    if name in spelled:
        return f"{file}: {spelled[name]}"
    return name


def _validation_problems(
    exc: ValidationError,
    environ: dict[str, str] | os._Environ[str],
    file: str,
    spelled: dict[str, str],
) -> list[str]:
    problems = []
    for error in exc.errors():
        cause = (error.get("ctx") or {}).get("error")  # a validator's own ValueError
        message = str(cause) if error["type"] == "value_error" and cause else error["msg"]
        name, *inside = error["loc"] or ("",)
        if not name:  # a rule over several settings: its message names them
            problems.append(message)
            continue
        where = _named(str(name), environ, file, spelled) + "".join(f"[{p!r}]" for p in inside)
        # A table's own check names the key inside it: "[catalog] busy: ...".
        problems.append(f"{where}{' ' if where.endswith(']') and not inside else ': '}{message}")
    return problems


def load_settings(config: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
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
    try:
        settings = Settings(**values)
    except ValidationError as exc:
        raise ConfigError(_validation_problems(exc, environ, str(path), spelled)) from None
    named = {name: _named(name, environ, str(path), spelled) for name in Settings.model_fields}
    settings._named = {name: said for name, said in named.items() if said != name}
    if overrides:  # command-line flags win over the environment
        settings = settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    return settings
