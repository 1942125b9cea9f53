"""The HTTP API answers only its own pages and clients (docs/internals/decisions.md, "A hostile web
page"). Before any route but those a platform signs (the channels that are ``signed``:
Telegram, Slack, Discord, which check their own secrets) runs, the server's middleware asks:

1. **Host.** The ``Host`` header names the address the server listens on, ``published_host``,
   ``localhost``, an IP address or an entry of ``allowed_hosts``; else 421 and nothing runs.
   A page that rebinds its own name to 127.0.0.1 sends its own name: refused.
2. **Origin.** A request that changes state (any method but GET, HEAD and OPTIONS) from a
   page of another origin is refused with 403, unless that origin is in ``cors_origins``;
   their requests get CORS headers, and their preflights are answered here.
3. **Proxy.** A ``/v1/*`` request that came through a proxy (``Forwarded``,
   ``X-Forwarded-For``, ...) while no ``webhook_token`` is set: 403, and one warning,
   unless ``webhook_allow_public = true``. The listen address is loopback, but whoever
   reaches the proxy would run the agent.

Each refusal is the webhook's JSON error body, counted in ``slashgate_http_refused_total``.
The media type of a body (415) is the webhook routes' own check (channels/webhook/checks.py).
"""

from __future__ import annotations

import dataclasses
import logging

from aiohttp import web
from aiohttp.web_urldispatcher import AbstractResource

from channels.errors import ErrorOut, error_body
from channels.webhook.exposure import is_loopback
from channels.webhook.settings import WebhookSettings
from gateway.metrics import Metrics
from gateway.openapi import Body, Operation, Response
from gateway.origins import is_ip, origin_text, split_host, split_origin

log = logging.getLogger("slashgate")

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OTHER_SITES = ("cross-site", "same-site")  # Sec-Fetch-Site of a page that is not the gateway's
# Headers a reverse proxy adds: RFC 7239's, and the ones nginx, Caddy, Traefik and Apache set.
PROXY_HEADERS = ("Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-IP")
API = "/v1/"
CORS_ORIGIN = web.RequestKey("slashgate_cors_origin", str)
_PREFLIGHT = {
    "Access-Control-Allow-Methods": "GET, POST",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, Accept, Idempotency-Key",
    "Access-Control-Max-Age": "600",
    "Vary": "Origin",
}
_KNOWN = 256  # Host (and Origin) values whose verdict is kept (more are judged each time)
_ERROR = (Body(model=ErrorOut),)


class Guard:
    def __init__(self, settings: WebhookSettings, metrics: Metrics) -> None:
        self.metrics = metrics
        self.signed: set[str] = set()  # the signed channels' paths (their routes' documents)
        self.signed_routes: set[AbstractResource] = set()
        hosts = settings.allowed_hosts
        self.any_host = "*" in hosts
        # Names a page of the gateway's own can be served under, besides the Host it sent.
        self.own_names = frozenset(h for h in hosts if not h.startswith("*"))
        names = {settings.host, settings.published_host or "", *self.own_names}
        self.names = frozenset(n.strip("[]").lower() for n in names if n) | {"localhost"}
        self.suffixes = tuple(h[1:] for h in hosts if h.startswith("*."))
        self.cors = frozenset(settings.cors_origins)
        self.proxy_needs_token = not (settings.webhook_token or settings.webhook_allow_public)
        self._hosts: dict[str, bool] = {}
        self._origins: dict[tuple[str, str | None], bool] = {}
        self._warned = False

    # -- the checks -----------------------------------------------------------------------

    def __call__(self, request: web.Request) -> web.StreamResponse | None:
        """The refusal (or the preflight's answer) for ``request``; None: its route runs."""
        if request.match_info.route.resource in self.signed_routes:
            return None
        path = request.path
        headers = request.headers
        host = headers.get("Host")
        # The verdict kept for a known Host read here: one call less on every request.
        if host is not None and not (self._hosts.get(host) or self._host_ok(host)):
            return self._refuse(
                421,
                "misdirected_request",
                "host",
                f"Host {host[:100]!r} is not one of this gateway's names: a client that "
                "reaches it by that name needs it in allowed_hosts (SLASHGATE_ALLOWED_HOSTS)",
            )
        origin = headers.get("Origin")
        method = request.method
        if method == "OPTIONS" and origin is not None:
            if "Access-Control-Request-Method" in headers:
                return self._preflight(origin)
        elif method not in SAFE_METHODS and (
            # No Origin: a browser that sent Sec-Fetch-Site without it still says where the
            # request came from; a client that is no browser sends neither.
            headers.get("Sec-Fetch-Site") in OTHER_SITES
            if origin is None
            else not self._origin_allowed(origin, host)
        ):
            return self._refuse(
                403,
                "forbidden_origin",
                "origin",
                f"requests from the pages of {(origin or 'another site')[:100]!r} are refused: "
                "to let that site's pages call this API, add its origin to cors_origins",
            )
        if self.proxy_needs_token and path.startswith(API):
            for through in PROXY_HEADERS:  # a loop, not next() of a generator: every request
                if through in headers:
                    return self._proxied(through)
        if origin is not None and self.cors and self._listed(origin):
            request[CORS_ORIGIN] = origin
        return None

    def _host_ok(self, host: str) -> bool:
        known = self._hosts.get(host)
        if known is None:
            known = self._judge(host)
            if len(self._hosts) < _KNOWN:
                self._hosts[host] = known
        return known

    def _judge(self, host: str) -> bool:
        if self.any_host:
            return True
        found = split_host(host)
        if found is None:
            return False
        name = found[0]
        return (
            name in self.names
            or is_ip(name)  # rebinding needs a name: an address is where the client connected
            or name.endswith(".localhost")  # RFC 6761: always loopback
            or (bool(self.suffixes) and name.endswith(self.suffixes))
        )

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        """A request from this gateway's own pages or from a listed origin."""
        key = (origin, host)
        known = self._origins.get(key)
        if known is None:
            known = self._origin_ok(origin, host)
            if len(self._origins) < _KNOWN:
                self._origins[key] = known
        return known

    def _origin_ok(self, origin: str, host: str | None) -> bool:
        found = split_origin(origin)
        if found is None:  # "null": a sandboxed page, a file, a redirect across sites
            return False
        _, name, port = found
        sent = split_host(host) if host is not None else None
        if sent is not None and sent[0] == name and sent[1] in (None, port):
            return True  # the page was served by whatever the client asked this from
        return name in self.own_names or self._listed(origin)

    def _listed(self, origin: str) -> bool:
        found = split_origin(origin) if self.cors else None
        return found is not None and origin_text(*found) in self.cors

    # -- the answers ----------------------------------------------------------------------

    def _refuse(self, status: int, code: str, reason: str, message: str) -> web.Response:
        self.metrics.http_refused(reason)
        return web.json_response(error_body(code, message), status=status)

    def _preflight(self, origin: str) -> web.Response:
        if not self._listed(origin):
            return self._refuse(
                403,
                "forbidden_origin",
                "origin",
                f"{origin[:100]!r} is not in cors_origins: its pages may not call this API",
            )
        return web.Response(
            status=204, headers={"Access-Control-Allow-Origin": origin, **_PREFLIGHT}
        )

    def _proxied(self, header: str) -> web.Response:
        if not self._warned:
            self._warned = True
            log.warning(
                "webhook: refusing /v1/* requests that come through a proxy (%s) with 403: no "
                "webhook_token is set, so whoever reaches the proxy would run the agent. Set "
                "webhook_token (SLASHGATE_WEBHOOK_TOKEN) and give it to the clients, or "
                "webhook_allow_public = true to serve /v1/* without a token on purpose",
                header,
            )
        return self._refuse(
            403,
            "proxy_needs_token",
            "proxy",
            "this gateway serves /v1/* through a proxy only with a token: set webhook_token "
            "(SLASHGATE_WEBHOOK_TOKEN) on it, or webhook_allow_public = true",
        )

    async def cors_headers(self, request: web.Request, response: web.StreamResponse) -> None:
        """``on_response_prepare``: a listed origin may read the answer (and its replay mark)."""
        if request.match_info.route.resource in self.signed_routes:
            return
        response.headers.add("Vary", "Origin")
        origin = request.get(CORS_ORIGIN)
        if origin is not None:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = "Idempotent-Replayed"

    def leave_alone(self, resources: list[AbstractResource]) -> None:
        """A signed channel's routes: none of the checks apply to them."""
        self.signed_routes.update(resources)
        self.signed.update(resource.canonical for resource in resources)

    def mount(self, app: web.Application) -> None:
        if self.cors:
            app.on_response_prepare.append(self.cors_headers)

    # -- the document ---------------------------------------------------------------------

    def describe(self, operations: list[Operation]) -> None:
        """The refusals above in the OpenAPI document of every route they apply to."""
        for index, op in enumerate(operations):
            if op.path in self.signed:
                continue
            added = {421: Response("The Host header names none of this gateway's hosts", _ERROR)}
            forbidden = []
            if op.method.upper() not in SAFE_METHODS:
                forbidden.append("a page of another origin (not in cors_origins)")
            if self.proxy_needs_token and op.path.startswith(API):
                forbidden.append("a request through a proxy while webhook_token is unset")
            if forbidden:
                added[403] = Response("Refused: " + "; or ".join(forbidden), _ERROR)
            responses = {**added, **op.responses}
            operations[index] = dataclasses.replace(op, responses=responses)


def guard_warnings(settings: WebhookSettings) -> list[str]:
    """What ``slashgate check`` says of these settings."""
    found = []
    if "*" in settings.allowed_hosts:
        found.append(
            'allowed_hosts = ["*"]: any Host header is served, so a web page that rebinds its '
            "name to this address can call the API and read its answers"
        )
    token = settings.webhook_token
    if settings.webhook_allow_public and not token and is_loopback(settings.host):
        found.append(
            "webhook_allow_public = true without webhook_token: a reverse proxy in front "
            "serves /v1/* to whoever reaches it (otherwise refused with 403)"
        )
    if settings.cors_origins and not token:
        shown = ", ".join(settings.cors_origins)
        found.append(
            f"cors_origins without webhook_token: the pages of {shown} run the agent from the "
            "browser of whoever visits them"
        )
    return found
