"""The gateway's own settings: the server, the core, the state, the runtimes, attachments.

Each channel adds its fields in a model of its folder that subclasses ``CoreSettings``; the
app composes them into one model, read from a TOML file and ``SLASHGATE_*`` variables
(``slashgate.config``). Fields are flat so that each has one obvious environment name
(``run_timeout`` -> ``SLASHGATE_RUN_TIMEOUT``); in the TOML file a section flattens into its
fields: ``[pi] command = [...]`` is ``pi_command``.
"""

from __future__ import annotations

import re
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
RUNTIMES = ("embedded", "acp", "pi", "electric")
SqliteSynchronous = Literal["full", "normal"]  # PRAGMA synchronous of the SQLite store
_RUNTIME_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


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

    # server
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    # Where clients reach the port when that is not host (a container's published address;
    # compose.yaml passes it). Only in a container does a loopback one stand in for
    # webhook_token (channels/webhook/exposure.py); elsewhere the listen address decides.
    published_host: str | None = None
    # Host names clients use besides the listen address, published_host, localhost and IP
    # addresses: a request with any other Host header is refused with 421 (a web page that
    # rebinds its name to this address; docs/deploy.md). "*.example.com": every name under
    # it; "*": any (the check off). Telegram's, Slack's and Discord's routes are not checked.
    allowed_hosts: list[str] = []
    # Origins (https://app.example.com) of other sites whose pages may call /v1/* from the
    # browser (CORS, preflight included). Other sites' POSTs are refused with 403.
    cors_origins: list[str] = []
    log_level: str = "INFO"  # DEBUG, INFO, WARNING, ERROR or CRITICAL
    # The third-party libraries' (aiogram, slack_sdk, hikari, aiohttp...): never more than
    # log_level shows. At DEBUG they log message texts and request bodies (gateway/logs.py).
    library_log_level: str = "INFO"
    log_format: Literal["text", "json"] = "text"
    # The largest request body any channel's route reads (the webhook's, Telegram's updates,
    # Slack's events): named after the webhook, where it was first.
    webhook_max_body: int = Field(1024 * 1024, ge=1)

    # core
    runtime: str = "embedded"  # embedded, acp, pi, electric or "package.module:name"
    run_timeout: float = Field(120.0, gt=0)
    busy_policy: Literal["queue", "reject", "interrupt"] = "queue"
    max_queue: int = Field(10, ge=0)
    inventory_wait: float = Field(5.0, ge=0)
    open_timeout: float = Field(120.0, gt=0)  # a runtime session's open; then it is retried
    cancel_grace: float = Field(5.0, gt=0)
    max_sessions: int = Field(2_000, ge=1)  # 256 MiB at worst: docs/operations.md
    interactive_only: list[str] = ["settings", "hotkeys", "theme", "themes"]
    catalog: dict[str, str] = {}
    show_reasoning: Literal["collapsed", "off"] = "collapsed"  # the agent's thoughts in chats

    # per-sender limits on the chat channels (docs/access.md); 0: no limit
    sender_rate: float = Field(20.0, ge=0, allow_inf_nan=False)  # inputs a minute
    sender_burst: int = Field(5, ge=1)  # inputs at once, on top of the rate
    sender_max_queued: int = Field(5, ge=0)  # inputs in the gateway at once, all conversations

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

    # Slack and Telegram Web API calls: seconds one attempt may take (then it is retried
    # where the reply must arrive; see docs/reliability.md)
    platform_timeout: float = Field(30.0, gt=0)
    # attachments, from every channel (docs/attachments.md)
    attachment_max_bytes: int = Field(20_000_000, ge=1)  # per file
    attachment_max_total: int = Field(50_000_000, ge=1)  # all the files of one message
    attachment_fetch_timeout: float = Field(30.0, gt=0)  # seconds to download one file
    # Tests only: lets the webhook fetch http:// and loopback/private addresses (a warning
    # at start; gateway/addresses.py has the ranges otherwise refused).
    attachment_allow_private_urls: bool = False

    # The agent's side (acp and pi runtimes; docs/security.md). Its working folder, unless
    # acp_cwd or pi_cwd names another: made (0700) at start, apart from the state and settings.
    workspace: Path = Path("slashgate-workspace")
    # When the gateway runs as root: the user (name or uid) the agent runs as.
    agent_user: str | None = None

    # acp runtime: any Agent Client Protocol agent over stdio
    acp_command: list[str] = []
    acp_cwd: Path | None = None  # unset: workspace
    acp_env: dict[str, SecretStr] = {}  # API keys, often: revealed only to the child
    acp_auth_method: str | None = None

    # pi runtime: `pi --mode rpc`, one process per conversation
    pi_command: list[str] = ["pi", "--mode", "rpc"]
    pi_cwd: Path | None = None  # unset: workspace
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
    # Where the settings came from, for ``slashgate check``'s warnings (slashgate/safety.py):
    # the TOML file, the secrets written in it in clear, those read from files of their own.
    _config_file: Path | None = PrivateAttr(default=None)
    _secrets_in_config: tuple[str, ...] = PrivateAttr(default=())
    _secret_files: dict[str, Path] = PrivateAttr(default_factory=dict)

    def named(self, name: str) -> str:
        """The setting ``name`` as the user gave it: ``slashgate.toml: [acp] command``,
        ``SLASHGATE_ACP_COMMAND``, or ``name`` itself.
        """
        return self._named.get(name, name)

    def agent_cwd(self, runtime: str) -> Path:
        """The working folder of the ``acp`` or ``pi`` agent: its ``cwd`` setting, else the
        workspace.
        """
        configured: Path | None = getattr(self, f"{runtime}_cwd")
        return self.workspace if configured is None else configured

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
