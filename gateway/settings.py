"""The gateway's own settings: the server, the core, the state, attachments.

Each channel and each runtime adds its fields in a model of its folder that subclasses
``CoreSettings`` (``channels/slack/settings.py``, ``gateway/runtimes/acp/settings.py``); the
app composes them into one model (``slashgate/composition.py``), read from a TOML file and
``SLASHGATE_*`` variables (``slashgate.config``). Fields are flat so that each has one
obvious environment name (``run_timeout`` -> ``SLASHGATE_RUN_TIMEOUT``); in the TOML file a
section flattens into its fields: ``[pi] command = [...]`` is ``pi_command``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from contract import Catalog

from .origins import host_setting, origin_setting
from .validation import SettingsRule, describe_validation_error

ENV_PREFIX = "SLASHGATE_"

MIN_RATE = 0.001  # a message per 1,000 s (or minutes): slower is a mistake, not a limit


def _rate(value: float) -> float:
    if 0 < value < MIN_RATE:
        raise ValueError(f"must be 0 (no limit) or at least {MIN_RATE}")
    return value


# An outbound rate limit (docs/rate-limits.md). Finite: an infinite rate is an interval of 0,
# which the pacer cannot divide by; and a tiny one an interval too long to sleep.
Rate = Annotated[float, Field(ge=0, allow_inf_nan=False), AfterValidator(_rate)]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SqliteSynchronous = Literal["full", "normal"]  # PRAGMA synchronous of the SQLite store


def secret_names(model: type[BaseModel]) -> list[str]:
    """The settings that hold secrets (``SecretStr``, or a table of them): each may also be
    read from a file (``SLASHGATE_<NAME>_FILE``), and is masked in the logs.
    """
    return [name for name, field in model.model_fields.items() if _holds(field.annotation)]


def _holds(annotation: Any) -> bool:
    return annotation is SecretStr or any(_holds(arg) for arg in get_args(annotation))


class CoreSettings(BaseSettings):
    # Errors name the field and the rule, not the input: that may hold tokens and API keys.
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", hide_input_in_errors=True
    )
    # The docstring under each field is its description: docs/configuration.md is made of them
    # (slashgate/settings_doc.py). Read there, not by pydantic's use_attribute_docstrings,
    # which would parse these sources at every start.

    # server
    host: str = "127.0.0.1"
    """Address the server listens on (also `--host`)."""
    port: int = Field(8080, ge=0, le=65535)
    """Port the server listens on (also `--port`); 0 picks a free one."""
    # Only in a container does a loopback one stand in for webhook_token
    # (channels/webhook/exposure.py); elsewhere the listen address decides.
    published_host: str | None = None
    """Where clients reach the port when that is not `host`: the address a container's port is
    published on (`compose.yaml` sets it)."""
    # Against a web page that rebinds its name to this address (docs/deploy.md). Telegram's,
    # Slack's and Discord's routes are not checked.
    allowed_hosts: list[str] = []
    """Host names clients use besides the listen address, `published_host`, `localhost` and IP
    addresses (a proxy's public name); any other `Host` header gets 421. `"*.example.com"`:
    every name under it; `"*"`: any."""
    cors_origins: list[str] = []
    """Origins of other sites (`https://app.example.com`) whose pages may call `/v1/*` from a
    browser (CORS, preflight included); other sites' `POST`s get 403."""
    log_level: str = "INFO"
    """`DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL`."""
    library_log_level: str = "INFO"
    """The same for the third-party libraries (aiogram, slack_sdk, hikari, aiohttp), never below
    `log_level`; at `DEBUG` they log message texts and request bodies."""
    log_format: Literal["text", "json"] = "text"
    """`text` lines, or `json`: one object a line."""
    # Named after the webhook, where it was first.
    webhook_max_body: int = Field(1024 * 1024, ge=1)
    """Largest request body any route reads (the webhook's, Telegram's updates, Slack's events),
    in bytes."""

    # core
    # Checked against the app's runtime registry where the settings are composed
    # (slashgate/composition.py): the gateway knows no runtime by name.
    runtime: str = "embedded"
    """The agent: `embedded` (the demo), `acp`, `pi`, `electric`, or your own
    `"package.module:name"` (a `slashgate.Bot`)."""
    run_timeout: float = Field(120.0, gt=0)
    """Seconds a turn may take; then the user gets the timeout text and the turn is cancelled."""
    busy_policy: Literal["queue", "reject", "interrupt"] = "queue"
    """Plain text while a turn runs: `queue` it as a follow-up, `reject` it (busy), or
    `interrupt` the turn."""
    max_queue: int = Field(10, ge=0)
    """Follow-ups queued per conversation; past that, the busy text."""
    inventory_wait: float = Field(5.0, ge=0)
    """Seconds an input waits for a new session's first command list before it is classified
    with what is known."""
    open_timeout: float = Field(120.0, gt=0)
    """Seconds a runtime session's open may take; then the next input tries again."""
    cancel_grace: float = Field(5.0, gt=0)
    """Seconds a runtime has to honour a cancel, and running inputs to finish when the gateway
    stops."""
    max_sessions: int = Field(2_000, ge=1)
    """Conversations kept; beyond that the least recently used idle one is closed (each costs
    1.5-77 KiB; 2,000 keep the worst case near 200 MiB: docs/operations.md)."""
    interactive_only: list[str] = ["settings", "hotkeys", "theme", "themes"]
    """Commands that only run in an interactive TUI: they get the `interactive_only` text."""
    catalog: dict[str, str] = {}
    """Your own user-facing texts, by category (`[catalog] busy = "..."`;
    `contract/catalog.py` lists them). Placeholders: `{name}` and `{error}`."""
    show_reasoning: Literal["collapsed", "off"] = "collapsed"
    """The agent's reasoning in chats: `collapsed` (folded where the channel can) or `off`."""

    # per-sender limits on the chat channels (docs/access.md)
    sender_rate: float = Field(20.0, ge=0, allow_inf_nan=False)
    """Inputs a minute one sender may send on a chat channel; 0: no limit."""
    sender_burst: int = Field(5, ge=1)
    """Inputs one sender may send at once, on top of `sender_rate`."""
    sender_max_queued: int = Field(5, ge=0)
    """Inputs of one sender in the gateway at once, all conversations; 0: no limit."""

    # state: the inbound journal, dedupe, runtime session ids (see docs/reliability.md)
    store: Literal["memory", "sqlite", "redis"] = "sqlite"
    """Where the inbound journal, dedupe and runtime state are kept: `sqlite` (one process),
    `redis` (replicas) or `memory` (nothing survives a restart)."""
    # Made (0700) when the SQLite store first opens: never by ``slashgate check``.
    data_dir: Path = Path(".slashgate")
    """The gateway's own files, in one folder (the SQLite store's file among them)."""
    state_path: Path | None = None
    """The SQLite store's file; unset: `state.sqlite3` in `data_dir`."""
    sqlite_synchronous: SqliteSynchronous = "full"
    """`full`: an acknowledged input survives a power cut; `normal` (WAL): a crash of the
    process only, for about a quarter less CPU per message."""
    memory_store_size: int = Field(10_000, ge=1)
    """Keys the memory store keeps; the least recently used go first."""
    sqlite_state_size: int = Field(100_000, ge=1)
    """Keys the SQLite store keeps (a conversation's commands, its session id); the least
    recently used go first."""
    redis_url: SecretStr | None = None
    """The Redis store: `redis://[:password@]host:port/db`."""
    redis_prefix: str = "slashgate:"
    """Prefix of every key the gateway writes in Redis."""
    dedupe_size: int = Field(100_000, ge=1)
    """Platform ids and Idempotency-Keys remembered across restarts."""
    dedupe_ttl: float = Field(86_400.0, gt=0)
    """Seconds they are remembered (Telegram redelivers for 24 hours)."""
    recovery: Literal["notify", "rerun"] = "notify"
    """A turn cut short by a crash: tell its user (`notify`) or run it again (`rerun`)."""
    replica_id: str | None = None
    """This process's name among replicas, stable across restarts; unset: a random one."""
    lease_ttl: float = Field(10.0, gt=0)
    """Seconds before a dead replica's conversations are taken over."""

    platform_timeout: float = Field(30.0, gt=0)
    """Seconds one Telegram, Slack or Discord API call may take before it counts as failed (and
    is retried where the reply must arrive)."""
    # attachments, from every channel (docs/attachments.md)
    attachment_max_bytes: int = Field(20_000_000, ge=1)
    """Largest attachment, in bytes."""
    attachment_max_total: int = Field(50_000_000, ge=1)
    """Largest total of one message's attachments, in bytes."""
    attachment_fetch_timeout: float = Field(30.0, gt=0)
    """Seconds to download one attachment."""
    # gateway/addresses.py has the ranges otherwise refused.
    attachment_allow_private_urls: bool = False
    """Tests only: let the webhook fetch `http://` and loopback or private addresses (a warning
    at start says so)."""

    # How the user wrote each setting given in a file or the environment (``named``).
    _named: dict[str, str] = PrivateAttr(default_factory=dict)
    # Where the settings came from, for ``slashgate check``'s warnings (slashgate/safety.py):
    # the TOML file, the env file, the secrets each holds in clear (where it wins), those read
    # from files of their own.
    _config_file: Path | None = PrivateAttr(default=None)
    _env_file: Path | None = PrivateAttr(default=None)
    _secrets_in_clear: dict[Path, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _secret_files: dict[str, Path] = PrivateAttr(default_factory=dict)

    def named(self, name: str) -> str:
        """The setting ``name`` as the user gave it: ``slashgate.toml: [acp] command``,
        ``SLASHGATE_ACP_COMMAND``, or ``name`` itself.
        """
        return self._named.get(name, name)

    # Validators have names of their own in every settings model: pydantic keeps one
    # validator per name across the bases of the composed model.
    @model_validator(mode="after")
    def _redis_has_a_url(self) -> Self:
        if self.store == "redis" and self.redis_url is None:
            raise SettingsRule(
                "{store} needs {url} (redis://host:port/db)",
                store=("store", "redis"),
                url="redis_url",
            )
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

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_are_names(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(host_setting(entry) for entry in value))

    @field_validator("cors_origins")
    @classmethod
    def _origins_are_origins(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(origin_setting(entry) for entry in value))

    @field_validator("log_level", "library_log_level")
    @classmethod
    def _log_level_exists(cls, value: str) -> str:
        if value.upper() not in LOG_LEVELS:
            raise ValueError("must be one of " + ", ".join(LOG_LEVELS))
        return value.upper()

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
