"""The fields the gateway reads from a Discord interaction, typed as Discord sends them: one
model read at the edge (endpoint.py), so that a signed interaction with any of them of another
type is a 400 before anything runs. hikari's entity factory takes most fields as given (a null
token was acknowledged, and its replies went to URLs that cannot exist), and an option named
by an object broke reading the options into a dict.

Fields not named here are hikari's to read; Discord adds new ones over time, so they are
left alone.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    StringConstraints,
    ValidationError,
    model_validator,
)

# Discord sends ids as strings of digits (they outgrow a JSON number).
Snowflake = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,20}$")]
# The token is a path segment of the replies' URLs: URL-safe characters only.
Token = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._~-]{1,1000}$")]

COMMAND, COMPONENT, AUTOCOMPLETE = 2, 3, 4


def _scalar(value: Any) -> str | int | float | bool | None:
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return value
    raise ValueError("should be a string, a number or a boolean")


class _Read(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class Option(_Read):
    name: str
    type: int
    value: Annotated[Any, AfterValidator(_scalar)] = None  # None: a subcommand's
    options: list[Option] | None = None  # a subcommand's own
    focused: bool | None = None


class Attachment(_Read):
    url: str
    filename: str
    size: int | None = None
    content_type: str | None = None


class Resolved(_Read):
    attachments: dict[Snowflake, Attachment] | None = None


class CommandData(_Read):
    id: Snowflake
    name: str
    type: int
    options: list[Option] | None = None
    resolved: Resolved | None = None


class ComponentData(_Read):
    custom_id: str
    component_type: int


class User(_Read):
    id: Snowflake


class Member(_Read):
    user: User
    roles: list[Snowflake] = []


class Message(_Read):
    content: str = ""


class _Interaction(_Read):
    type: int
    id: Snowflake
    application_id: Snowflake
    token: Token
    version: int | None = None
    channel_id: Snowflake
    guild_id: Snowflake | None = None
    locale: str | None = None
    member: Member | None = None  # in a server
    user: User | None = None  # in a DM

    @model_validator(mode="after")
    def _someone(self) -> _Interaction:
        if self.member is None and self.user is None:
            raise ValueError("neither member nor user")
        return self

    @property
    def user_id(self) -> str:
        who = self.member.user if self.member is not None else self.user
        assert who is not None  # _someone
        return who.id


class Called(_Interaction):
    """A command (type 2) or an autocomplete request (type 4)."""

    data: CommandData


class Clicked(_Interaction):
    """A button (type 3)."""

    data: ComponentData
    message: Message


class Unreadable(ValueError):
    """A signed interaction with a field of a type Discord does not send: why, in one line."""


def read(payload: dict[str, Any]) -> Called | Clicked | None:
    """The interaction's fields (``payload["type"]`` is an int); None for a kind the gateway
    does not take. Raises Unreadable.
    """
    kind = payload["type"]
    model: type[Called | Clicked] | None = (
        Called if kind in (COMMAND, AUTOCOMPLETE) else Clicked if kind == COMPONENT else None
    )
    if model is None:
        return None
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise Unreadable(reason(exc)) from None


def reason(exc: ValidationError) -> str:
    """The first error, where and what, without the value (a token must not be logged)."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "the interaction"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
