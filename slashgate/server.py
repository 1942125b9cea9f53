"""The aiohttp server that mounts every enabled channel, plus health."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import shutil
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from channels.webhook.settings import WebhookSettings
from gateway import logs, openapi
from gateway.api import ERROR_ANSWERS, Channel, ErrorAnswer
from gateway.core import Gateway
from gateway.logs import Sampler, Secrets, secrets_of
from gateway.metrics import Metrics
from gateway.runtimes import Runtime
from gateway.runtimes.stdio import program
from gateway.runtimes.workspace import AgentSettings
from gateway.settings import CoreSettings
from gateway.state import state_file, state_file_notice

from . import probes
from .guard import Guard
from .links import browser_base, link_lines
from .listening import listen_failure
from .registry import agent_runtime, build_channels, build_runtime, refusal, settings_as
from .safety import unsafe_settings

log = logging.getLogger("slashgate")
http_log = logging.getLogger("slashgate.http")
_REASON = 200  # characters of a refused request's path and reason in its log line


class StartError(Exception):
    """The gateway could not start; the message says what failed."""


class Refused(StartError):
    """The settings would serve what must not be (/v1 open to anyone): a configuration
    error, said before anything starts.
    """


@dataclass
class Running:
    gateway: Gateway
    channels: list[Channel]
    app: web.Application
    url: str
    links: list[str]  # ``web chat: http://127.0.0.1:8080/chat``, for a person to open


def build_app(
    settings: CoreSettings, runtime: Runtime | None = None
) -> tuple[web.Application, Gateway, list[Channel]]:
    gateway = Gateway(settings, runtime or build_runtime(settings))
    answers: list[ErrorAnswer] = []
    guard = Guard(settings_as(WebhookSettings, settings), gateway.metrics)
    # One middleware for every route: each layer aiohttp runs costs every request.
    app = web.Application(middlewares=[client_errors(gateway.metrics, answers, guard)])
    app[ERROR_ANSWERS] = answers  # the channels add theirs as they mount
    channels = build_channels(gateway, settings)
    probes.mount(app, gateway, channels, Secrets(secrets_of(settings)))
    openapi.mount(app, _version())
    for channel in channels:
        mounted = len(app.router.resources())
        channel.mount(app)
        if channel.signed:  # the guard leaves the routes it just added alone
            guard.leave_alone(list(app.router.resources())[mounted:])
    guard.mount(app)
    guard.describe(app.get(openapi.OPERATIONS, []))
    return app, gateway, channels


def _version() -> str:
    try:
        return version("slashgate")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


def client_errors(
    metrics: Metrics, answers: list[ErrorAnswer], guard: Guard | None = None
) -> Middleware:
    """One log line per request answered with a 4xx (rate-limited: a flood of bad requests
    costs a few lines and no memory), counted in ``slashgate_malformed_requests``. The
    client's mistake is never logged with a traceback. A failure is answered by the first of
    ``answers`` that takes it (then counted and logged as that answer). ``guard`` is asked
    first: a request it refuses never reaches its route.
    """
    sampler = Sampler()

    def note(request: web.Request, status: int, reason: str) -> None:
        metrics.malformed_request(status)
        if sampler.allow():
            http_log.warning(
                "refused %s %s: %d %s%s",
                request.method,
                request.rel_url.raw_path[:_REASON],  # as sent (escaped): no control characters
                status,
                reason[:_REASON],
                sampler.held_back(),
            )

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        refused = None if guard is None else guard(request)
        try:
            response = refused if refused is not None else await handler(request)
        except Exception as exc:
            answered = _answer(answers, request, exc)
            if answered is None:
                if isinstance(exc, web.HTTPException) and 400 <= exc.status < 500:
                    note(request, exc.status, exc.reason)
                raise
            response = answered
        if 400 <= response.status < 500:
            note(request, response.status, _reason(response))
        return response

    return middleware


def _answer(
    answers: list[ErrorAnswer], request: web.Request, exc: Exception
) -> web.StreamResponse | None:
    for answer in answers:
        response = answer(request, exc)
        if response is not None:
            return response
    return None


def _reason(response: web.StreamResponse) -> str:
    """The message of a JSON error body (``error.message`` or Telegram's ``description``)."""
    body = getattr(response, "body", None)
    if isinstance(body, bytes) and response.content_type == "application/json":
        try:
            data = json.loads(body)
        except ValueError:
            return response.reason
        if isinstance(data, dict):
            error = data.get("error")
            message = error.get("message") if isinstance(error, dict) else data.get("description")
            if isinstance(message, str):
                return message
    return response.reason


@asynccontextmanager
async def running(settings: CoreSettings, runtime: Runtime | None = None) -> AsyncIterator[Running]:
    """Start the gateway, its server and its channels; stop them all on exit."""
    if refused := refusal(settings):
        raise Refused(refused)
    app, gateway, channels = build_app(settings, runtime)
    # No auto_decompress: aiohttp would answer an encoding it cannot decode with plain text
    # before the routes see it; they decode (gateway.body), with a size cap and JSON errors.
    # Requests still in flight at shutdown get the grace, not aiohttp's default minute.
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        auto_decompress=False,
        shutdown_timeout=settings.cancel_grace,
    )
    started: list[Channel] = []
    loop = asyncio.get_running_loop()
    handler = loop.get_exception_handler()
    loop.set_exception_handler(logs.without_payloads)
    try:
        try:
            _warn_of_a_missing_agent(settings)
            for warning in unsafe_settings(settings):
                log.warning("%s", warning)
            await gateway.start()
            log.info("runtime: %s", gateway.runtime.describe())
            log.info("store: %s", _describe_store(settings))
            if notice := state_file_notice(settings):
                log.warning("store: %s", notice)
            await runner.setup()
            site = web.TCPSite(runner, settings.host, settings.port)
            try:
                await site.start()
            except OSError as exc:  # said in the user's words: the port, and --port
                if said := listen_failure(exc, settings.host, settings.port):
                    raise StartError(said) from None
                raise
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            log.info("server: listening on http://%s:%s", settings.host, port)
            for channel in channels:
                await channel.start()
                started.append(channel)
                log.info("channel: %s", channel.describe())
                await _log_access(gateway, channel.name)
                gateway.recoverable(channel.name, channel.recovered)
            await gateway.recover()
        except StartError:
            raise
        except Exception as exc:  # a refused token, an agent that is not there
            raise StartError(f"{type(exc).__name__}: {exc}") from exc
        settle()
        base = browser_base(settings.host, settings.published_host, port)
        links = link_lines(base, channels)
        yield Running(gateway, channels, app, f"http://{settings.host}:{port}", links)
    finally:
        # Cancel the turns first, while the channels can still deliver their replies; then
        # the channels stop taking input and finish, then the server and the runtime go.
        await gateway.stop_runs()
        for channel in reversed(started):
            await channel.stop()
        await runner.cleanup()
        await gateway.stop()
        loop.set_exception_handler(handler)
        gc.unfreeze()


async def _log_access(gateway: Gateway, channel: str) -> None:
    """A chat channel's policy in one line, each open door in a warning, and how to approve
    the first sender while it has no owner.
    """
    if channel not in gateway.access.chats:
        return
    log.info("access: %s: %s", channel, gateway.access.summary(channel))
    for warning in gateway.access.warnings(channel):
        log.warning("access: %s", warning)
    if hint := await gateway.access.first_owner_hint(channel):
        log.info("access: %s", hint)


_settled_before = False  # a server of this process has settled already


def settle() -> None:
    """Once started: the start-up's objects (modules, models, schemas: tens of thousands,
    many more with aiogram) out of the collector's way until the server stops. Serving
    Telegram makes cyclic garbage, and each full collection walked them all again: about
    170 ms per collection in the bench, 2-4 ms once frozen; a big message's allocations set
    off full collections of 30-90 ms on the loop. The first start collects all garbage
    first, so that none is kept while frozen. A later start in the same process (a library
    user's restart; every test that starts a server) collects the young generations only: a
    full collection there walked every object again, 0.25-0.5 s per start. What an earlier
    server left in the old generation then stays frozen for this server's life and is
    collected as usual once it stops. A frozen object freed later is freed as usual.
    """
    global _settled_before
    gc.collect(1 if _settled_before else 2)
    _settled_before = True
    gc.freeze()


def _warn_of_a_missing_agent(settings: CoreSettings) -> None:
    """An agent program that is not there: every input would fail, so say what to check."""
    runtime = agent_runtime(settings)
    if runtime is None:
        return
    command = settings_as(AgentSettings, settings).agent_command(runtime)
    if command and shutil.which(program(command)[0]) is None:
        log.warning(
            "runtime %s: %r is not an executable file or on PATH: check %s_command and PATH",
            runtime,
            command[0],
            runtime,
        )


def _describe_store(settings: CoreSettings) -> str:
    if settings.store == "sqlite":
        return f"sqlite ({state_file(settings)})"
    if settings.store == "redis":  # not the URL: it may hold a password
        return f"redis (shared by the replicas; this one is {settings.replica_id or 'unnamed'})"
    return f"memory (at most {settings.memory_store_size} keys, lost on restart)"


async def serve(settings: CoreSettings, runtime: Runtime | None = None) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with running(settings, runtime) as server:
        # The runtime and channels are in the start-up log lines just above.
        logs.ready.info("slashgate listening on %s", server.url)
        for line in server.links:  # last on the first screen: what to open
            logs.ready.info("%s", line)
        await stop.wait()
    log.info("stopped")
