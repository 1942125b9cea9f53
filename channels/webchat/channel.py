"""Serves the web chat page and its assets; the page talks to the webhook's /v1 API.

The assets are package data, read once at start: nothing is fetched from elsewhere, and a
strict Content-Security-Policy keeps the page to its own origin (no inline script, so no
agent text can ever run as code even if it reached the DOM as HTML).
"""

from __future__ import annotations

import hashlib
from importlib.resources import files

from aiohttp import web

from gateway.api import Channel, GatewayAPI
from gateway.openapi import Body, Operation, Param, Response, document

from .settings import WebchatSettings

_TYPES = {
    "index.html": "text/html; charset=utf-8",
    "chat.js": "text/javascript; charset=utf-8",
    "chat.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",  # revalidated by ETag: a new version shows on reload
}


class _Asset:
    __slots__ = ("body", "content_type", "etag")

    def __init__(self, name: str) -> None:
        self.body = (files(__package__) / "static" / name).read_bytes()
        self.content_type = _TYPES[name]
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:32] + '"'

    def response(self, request: web.Request) -> web.Response:
        headers = {**_HEADERS, "ETag": self.etag}
        if request.headers.get("If-None-Match") == self.etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=self.body, headers={**headers, "Content-Type": self.content_type})


class WebchatChannel(Channel[WebchatSettings]):
    name = "webchat"

    def __init__(self, gateway: GatewayAPI, settings: WebchatSettings) -> None:
        super().__init__(gateway, settings)
        self._assets = {name: _Asset(name) for name in _TYPES}

    def mount(self, app: web.Application) -> None:
        app.router.add_get("/", self.root)
        app.router.add_get("/chat", self.page)
        app.router.add_get("/chat/static/{name}", self.asset)
        page = (Body("text/html", schema={"type": "string"}),)
        document(
            app,
            Operation("GET", "/", "Redirects to the web chat", "webchat", {302: Response("/chat")}),
            Operation("GET", "/chat", "The web chat page", "webchat", {200: Response("", page)}),
            Operation(
                "GET",
                "/chat/static/{name}",
                "The web chat's scripts and styles",
                "webchat",
                {200: Response("The file"), 404: Response("No such file")},
                params=(Param("name", "path", "The file's name"),),
            ),
        )

    def describe(self) -> str:
        return "web chat (GET /chat)"

    def links(self, base: str) -> list[tuple[str, str]]:
        return [("web chat", f"{base}/chat")]

    async def root(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/chat")

    async def page(self, request: web.Request) -> web.Response:
        return self._assets["index.html"].response(request)

    async def asset(self, request: web.Request) -> web.Response:
        asset = self._assets.get(request.match_info["name"])
        if asset is None or asset.content_type.startswith("text/html"):
            raise web.HTTPNotFound()
        return asset.response(request)
