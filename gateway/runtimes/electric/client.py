"""HTTP calls to an Electric Agents server, on one aiohttp ClientSession."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, TypeVar
from urllib.parse import quote

import aiohttp
from pydantic import BaseModel
from yarl import URL

from . import stream
from .ids import principal_url
from .wire import BAD_RESPONSE, DUPLICATE_URL, ElectricError, Entity, EntityType

_M = TypeVar("_M", bound=BaseModel)

PRINCIPAL_HEADER = "Electric-Principal"
# What a request raises when the server refused it or it did not get through.
REQUEST_ERRORS = (ElectricError, aiohttp.ClientError, TimeoutError)
API_TIMEOUT = aiohttp.ClientTimeout(total=30, sock_connect=10)


class ElectricClient:
    """The routes the runtime uses. ``principal`` is the gateway's own principal key (or None:
    no header, which a development server maps to its ``system:dev-local`` principal).
    """

    def __init__(self, base_url: str, principal: str | None) -> None:
        self.base = base_url.rstrip("/")
        # For logs, user-facing texts and the state store: credentials in the URL stay out.
        self.shown = str(URL(self.base).with_user(None)).rstrip("/")
        self.principal = principal
        self._http: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=API_TIMEOUT, raise_for_status=False)

    async def close(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            await http.close()

    @property
    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            raise RuntimeError("the Electric client is not started")
        return self._http

    def url(self, path: str) -> URL:
        """``path`` is already percent-encoded (ours are built so; the server's come so)."""
        return URL(self.base + path, encoded=True)

    def headers(self, principal: str | None = None) -> dict[str, str]:
        chosen = principal or self.principal
        return {PRINCIPAL_HEADER: chosen} if chosen else {}

    async def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        principal: str | None = None,
        model: type[_M] | None = None,
    ) -> Any:
        """The answer's JSON (as ``model`` if given); ElectricError for a refusal and for an
        answer that is not what the server's code sends.
        """
        async with self.http.request(
            method, self.url(path), json=body, headers=self.headers(principal)
        ) as response:
            data = await response.read()
            if response.status >= 400:
                raise ElectricError.from_response(response.status, data)
            try:
                if model is not None:
                    return model.model_validate_json(data)
                return json.loads(data) if data.strip() else None
            except ValueError as exc:  # pydantic's ValidationError is one
                raise ElectricError(
                    response.status, BAD_RESPONSE, f"unexpected answer to {method} {path}"
                ) from exc

    def _refused(self, exc: ElectricError, type_name: str) -> ElectricError:
        """A 401 to the gateway's own principal on a type's routes, said as what it is: the
        server refused that principal (its message quoted), and the grant that is missing.
        Any other error as it is.
        """
        if exc.status != 401:
            return exc
        if self.principal is None:
            who = "the gateway, which sends no principal (electric_principal is not set)"
            fix = f"set electric_principal and grant it spawn on the entity type {type_name}"
        else:
            who = f"the principal {self.principal}"
            fix = f"it needs the spawn grant on the entity type {type_name}"
        text = f'the Electric Agents server refused {who}: "{exc.message}" ({fix})'
        return ElectricError(exc.status, exc.code, text, exc.details)

    # -- routes ---------------------------------------------------------------------------

    async def entity_type(self, name: str) -> EntityType:
        """The type's declaration (reading it needs ``spawn`` on the type, as creating does)."""
        path = f"/_electric/entity-types/{_segment(name)}"
        try:
            result: EntityType = await self._request("GET", path, model=EntityType)
        except ElectricError as exc:
            raise self._refused(exc, name) from None
        return result

    async def create_entity(self, type_name: str, entity_id: str, body: dict[str, Any]) -> Entity:
        """PUT the entity; one that exists already (409 DUPLICATE_URL) is read instead."""
        path = _entity_path(type_name, entity_id)
        try:
            created: Entity = await self._request("PUT", path, body, model=Entity)
            return created
        except ElectricError as exc:
            if exc.status != 409 or exc.code != DUPLICATE_URL:
                raise self._refused(exc, type_name) from None
        found: Entity = await self._request("GET", path, model=Entity)
        return found

    async def send(
        self, type_name: str, entity_id: str, message: dict[str, Any], principal: str
    ) -> None:
        path = f"{_entity_path(type_name, entity_id)}/send"
        await self._request("POST", path, message, principal)

    async def send_as_user(
        self, type_name: str, entity_id: str, message: dict[str, Any], principal: str
    ) -> None:
        """Send as a chat user. Only the entity's creator (the gateway) and its grantees may
        write to it (permissions.ts): a user's first send is refused (401) until the gateway
        grants that one principal write, then sent again. A grant the gateway may not give
        leaves the user with the send's refusal.
        """
        try:
            await self.send(type_name, entity_id, message, principal)
            return
        except ElectricError as exc:
            if exc.status != 401:
                raise
            refused = exc
        grant = {
            "subject_kind": "principal",
            "subject_value": principal_url(principal),
            "permission": "write",
        }
        try:
            await self.grant(type_name, entity_id, grant)
        except ElectricError:
            raise refused from None
        await self.send(type_name, entity_id, message, principal)

    async def grant(self, type_name: str, entity_id: str, grant: dict[str, Any]) -> None:
        """Add a permission grant (needs ``manage`` on the entity: its creator has it)."""
        await self._request("POST", f"{_entity_path(type_name, entity_id)}/grants", grant)

    async def set_tag(self, type_name: str, entity_id: str, key: str, value: str) -> None:
        path = f"{_entity_path(type_name, entity_id)}/tags/{_segment(key)}"
        await self._request("POST", path, {"value": value})

    async def signal(self, type_name: str, entity_id: str, signal: str) -> None:
        await self._request(
            "POST", f"{_entity_path(type_name, entity_id)}/signal", {"signal": signal}
        )

    def read(
        self, stream_path: str, offset: str, live: stream.LiveMode
    ) -> AsyncIterator[stream.Batch]:
        return stream.read(self.http, self.url(stream_path), offset, live, self.headers())


def _segment(value: str) -> str:
    return quote(value, safe="")


def _entity_path(type_name: str, entity_id: str) -> str:
    return f"/_electric/entities/{_segment(type_name)}/{_segment(entity_id)}"
