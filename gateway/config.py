"""One settings model: a TOML file, then ``SLASHGATE_*`` environment variables on top.

Fields are flat so that each has one obvious environment name (``telegram_token`` ->
``SLASHGATE_TELEGRAM_TOKEN``). In the TOML file a section flattens into its fields:
``[telegram] token = "..."`` is ``telegram_token``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from contract import Catalog


class Settings(BaseSettings):
    # Errors name the field and the rule, not the input: that may hold tokens and API keys.
    model_config = SettingsConfigDict(
        env_prefix="SLASHGATE_", extra="forbid", hide_input_in_errors=True
    )

    # server
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    log_level: str = "INFO"

    # core
    runtime: Literal["embedded", "acp", "pi", "electric"] = "embedded"
    run_timeout: float = Field(120.0, gt=0)
    busy_policy: Literal["queue", "reject", "interrupt"] = "queue"
    max_queue: int = Field(10, ge=0)
    inventory_wait: float = Field(5.0, ge=0)
    cancel_grace: float = Field(5.0, gt=0)
    max_sessions: int = Field(10_000, ge=1)
    interactive_only: list[str] = ["settings", "hotkeys", "theme", "themes"]
    catalog: dict[str, str] = {}

    # state: "sqlite" is the default for the electric runtime (see below)
    store: Literal["memory", "sqlite"] = "memory"
    state_path: Path = Path("slashgate-state.sqlite3")
    memory_store_size: int = Field(10_000, ge=1)  # keys; the least recently used go first

    # webhook channel
    webhook_token: SecretStr | None = None
    webhook_max_body: int = Field(1024 * 1024, ge=1)
    idempotency_size: int = Field(10_000, ge=1)
    idempotency_ttl: float = Field(3600.0, gt=0)

    # telegram channel
    telegram_token: SecretStr | None = None
    telegram_secret: SecretStr | None = None
    telegram_mode: Literal["webhook", "polling"] = "webhook"
    telegram_api_base: str = "https://api.telegram.org"
    telegram_group_text: Literal["mention", "all"] = "mention"
    telegram_webhook_url: str | None = None  # public URL of /telegram/webhook, set at start
    telegram_edit_interval: float = Field(1.0, gt=0)  # seconds between edits of one chat

    # slack channel
    slack_bot_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_api_base: str = "https://slack.com/api/"
    slack_umbrella_command: str = "agent"
    slack_public_url: str = "https://example.invalid"

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

    @model_validator(mode="after")
    def _telegram_webhook_has_a_secret(self) -> Settings:
        if self.telegram_token and self.telegram_mode == "webhook" and not self.telegram_secret:
            raise ValueError(
                "Telegram webhook mode needs SLASHGATE_TELEGRAM_SECRET (the secret_token given "
                "to setWebhook); or set SLASHGATE_TELEGRAM_MODE=polling"
            )
        return self

    @model_validator(mode="after")
    def _electric_state_is_durable(self) -> Settings:
        # Electric keeps each conversation's stream position and /new count in the store:
        # unless a store was chosen they go to SQLite (DESIGN.md: the durable default), so
        # that a restart resumes every stream instead of reading it again from its start.
        if self.runtime == "electric" and "store" not in self.model_fields_set:
            self.store = "sqlite"
        return self

    @field_validator("catalog")
    @classmethod
    def _catalog_keys_exist(cls, value: dict[str, str]) -> dict[str, str]:
        Catalog(**value)  # an unknown key is a typo: refuse it at start-up
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


def flatten_toml(data: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and key != "catalog":
            for inner, inner_value in value.items():
                flat[f"{key}_{inner}"] = inner_value
        else:
            flat[key] = value
    return flat


def load_settings(config: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Settings from ``config`` (or ``SLASHGATE_CONFIG``), the environment, then overrides."""
    path = config or os.environ.get("SLASHGATE_CONFIG")
    values: dict[str, Any] = {}
    if path:
        with open(path, "rb") as fh:
            values = flatten_toml(tomllib.load(fh))
    settings = Settings(**values)
    if overrides:  # command-line flags win over the environment
        settings = settings.model_copy(update={k: v for k, v in overrides.items() if v is not None})
    return settings
