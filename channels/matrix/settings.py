"""The Matrix channel's settings (``[matrix]``, ``SLASHGATE_MATRIX_*``): on when
``matrix_homeserver`` is set.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator

from gateway.access import Ids, access_settings
from gateway.settings import Rate
from gateway.validation import HTTP_URL, SettingsRule

# Matrix ids: users (@name:server) and rooms (!opaque:server); the server part may carry a
# port. Rooms of version 12 on (Synapse's default since 1.135) have no server part: the id is
# the create event's hash (!opaque). All are immutable (a room alias, #name:server, is not).
_SERVER = r"[A-Za-z0-9.:\[\]-]{1,255}"
USER_ID = re.compile(rf"@[^:\s]{{1,255}}:{_SERVER}")
IDS = Ids(
    re.compile(rf"{USER_ID.pattern}|![^:\s]{{1,255}}(:{_SERVER})?"),
    "a Matrix user id (@name:server) or room id (!id:server, or !id in rooms of version 12)",
)


class MatrixSettings(access_settings("matrix", IDS)):  # type: ignore[misc]
    matrix_homeserver: str | None = None
    """The homeserver's client-server API base URL (`https://matrix.example.org`); setting
    it turns the Matrix channel on."""
    matrix_user_id: str | None = None
    """The bot account's user id (`@slashgate:example.org`); with a password, required."""
    matrix_access_token: SecretStr | None = None
    """The bot's access token (or log in with `matrix_user_id` and `matrix_password`)."""
    matrix_password: SecretStr | None = None
    """The bot's password: logs in at start when no access token is set."""
    matrix_device_id: str | None = None
    """The device to log in as (kept across restarts so encrypted rooms keep their keys);
    unset: the one the access token belongs to, or `SLASHGATE` with a password."""
    matrix_crypto_path: Path | None = None
    """The end-to-end encryption store (an SQLite file: the bot device's keys, the rooms'
    session keys, what the bot knows of encrypted rooms); unset: `matrix-crypto.sqlite3` in
    `data_dir`. One gateway process per bot device."""
    matrix_pickle_key: SecretStr | None = None
    """The key the encryption store's secrets are sealed with (change it and the store is
    unreadable); unset: a fixed key, and the file's permissions (0600) guard it alone."""
    matrix_trust: Literal["tofu", "cross_signed"] = "tofu"
    """Which devices the bot encrypts for and takes messages from in encrypted rooms: `tofu`
    (every device of the room's members, trusted as first seen; changed keys refused) or
    `cross_signed` (only devices their owner has cross-signed: the others get no room keys,
    and their messages are not run but answered with a notice)."""
    matrix_sync_timeout: float = Field(30.0, gt=0)
    """Seconds one long-polled `/sync` waits for news."""
    matrix_edit_interval: float = Field(1.0, gt=0)
    """Seconds between edits of a streamed reply in one room."""
    matrix_rate_room: Rate = 1.0
    """Messages and edits a second in one room (Synapse's default per-user limit is
    0.17 a second with a burst of 10); 0: no limit."""
    matrix_rate_global: Rate = 10.0
    """Messages and edits a second for the whole bot; 0: no limit."""

    @field_validator("matrix_homeserver")
    @classmethod
    def _matrix_homeserver_is_a_url(cls, value: str | None) -> str | None:
        if value is not None and not HTTP_URL.fullmatch(value):
            raise ValueError("must be an http:// or https:// URL, like https://matrix.example.org")
        return value

    @field_validator("matrix_user_id")
    @classmethod
    def _matrix_user_id_is_one(cls, value: str | None) -> str | None:
        if value is not None and not USER_ID.fullmatch(value):
            raise ValueError("must be a Matrix user id, like @slashgate:example.org")
        return value

    @model_validator(mode="after")
    def _matrix_has_credentials(self) -> Self:
        if not self.matrix_homeserver:
            for name in ("matrix_access_token", "matrix_password", "matrix_user_id"):
                if getattr(self, name):
                    raise SettingsRule(
                        "{name} is set but {server} is not: the Matrix channel needs its "
                        "homeserver's URL",
                        name=name,
                        server="matrix_homeserver",
                    )
            return self
        if not self.matrix_access_token and not (self.matrix_password and self.matrix_user_id):
            raise SettingsRule(
                "{server} is set but neither {token} nor {user} with {password}: the bot "
                "must sign in",
                server="matrix_homeserver",
                token="matrix_access_token",
                user="matrix_user_id",
                password="matrix_password",
            )
        return self


def enabled(settings: MatrixSettings) -> bool:
    return settings.matrix_homeserver is not None
