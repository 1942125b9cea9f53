"""A lean Redis client for the Redis store's commands: one connection, commands pipelined.

Every command issued in one pass of the event loop goes out in one write, and the replies
come back in order on the same connection (hiredis parses them): under load a turn's commands
share their system calls with the other turns', and each costs a future and a few
microseconds of Python instead of redis-py's layers (pool, retry, parser: about 125 us of
CPU per command on the 2-core machine of docs/internals/performance.md).

A caller cancelled while it waits leaves the command to run: its reply is read and dropped,
so the connection stays in step (redis-py could swallow such a cancel, redis/redis-py#2028).
A connection that drops (Redis restarted) is replaced by the next command; a command that was
waiting on it is sent again on the new one, a few times with a short backoff (as redis-py's
retry did), and past those it fails with ``StoreUnavailable``. So does a command that waits
longer than ``timeout`` for its reply: the connection is dropped with it. A command sent again
may have run already (the reply was lost, not the command): the Redis store's scripts come out
as if run once (gateway/state/redis_scripts.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import ssl
import time
from collections import deque
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import hiredis

from .base import StoreUnavailable

_RETRIES = (0.05, 0.1, 0.2)  # seconds before each new connection, after a dropped one


class Lost(Exception):
    """The connection dropped before the command's reply came: it may be sent again."""


class _Connection(asyncio.Protocol):
    def __init__(self, timeout: float) -> None:
        self._reader = hiredis.Reader()
        self._waiting: deque[asyncio.Future[Any]] = deque()
        self._out: list[bytes] = []
        self._transport: asyncio.Transport | None = None
        self._timeout = timeout
        self._since = 0.0  # since when the oldest waiting command waits for its reply
        self._watch: asyncio.TimerHandle | None = None
        self.lost: Exception | None = None
        self._loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def send(self, packed: bytes) -> asyncio.Future[Any]:
        if self.lost is not None:  # nothing would answer it: the caller connects anew
            raise Lost(f"Redis: connection lost ({self.lost})")
        future = self._loop.create_future()
        if not self._waiting:
            self._since = time.monotonic()
            if self._watch is None:
                self._watch = self._loop.call_later(self._timeout / 2, self._check)
        self._waiting.append(future)
        if not self._out:
            self._loop.call_soon(self._flush)  # after the other commands of this pass
        self._out.append(packed)
        return future

    def _flush(self) -> None:
        out, self._out = self._out, []
        if self._transport is not None and self.lost is None:
            self._transport.write(b"".join(out))

    def data_received(self, data: bytes) -> None:
        reader, waiting = self._reader, self._waiting
        reader.feed(data)
        while (reply := reader.gets()) is not False:
            future = waiting.popleft()
            if future.done():  # its caller was cancelled
                continue
            if isinstance(reply, hiredis.ReplyError):
                future.set_exception(reply)
            else:
                future.set_result(reply)
        self._since = time.monotonic()

    def _check(self) -> None:
        self._watch = None
        if not self._waiting or self.lost is not None:
            return
        if time.monotonic() - self._since > self._timeout:
            self._drop(StoreUnavailable(f"Redis: no reply in {self._timeout:g} s"))
        else:
            self._watch = self._loop.call_later(self._timeout / 2, self._check)

    def connection_lost(self, exc: Exception | None) -> None:
        self._drop(Lost(f"Redis: connection lost ({exc or 'closed by the server'})"))

    def _drop(self, why: Exception) -> None:
        if self.lost is None:
            self.lost = why
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_exception(why)
        if self._transport is not None:
            self._transport.abort()

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self._drop(StoreUnavailable("the Redis store is closed"))


class Resp:
    """Commands to the Redis at ``url``: ``redis://`` or ``rediss://`` (TLS) with its user,
    password and database number if any, or ``unix://<socket path>?db=<n>``.
    """

    def __init__(self, url: str, timeout: float = 5.0, connect_timeout: float = 2.0) -> None:
        # The URL may hold a password: an error names its scheme or its part, never the URL.
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise StoreUnavailable(
                f"Redis: a redis://, rediss:// or unix:// URL, not {parts.scheme}://"
            )
        self._socket = parts.path if parts.scheme == "unix" else None
        self._host = parts.hostname or "localhost"
        try:
            self._port = parts.port or 6379
        except ValueError:
            raise StoreUnavailable(
                "Redis: the URL's port is not a number from 0 to 65535"
            ) from None
        self._ssl = ssl.create_default_context() if parts.scheme == "rediss" else None
        self._hello: list[bytes] = []  # sent first on each new connection
        if parts.password is not None:
            user = (unquote(parts.username),) if parts.username else ()
            self._hello.append(_pack("AUTH", *user, unquote(parts.password)))
        database = parts.path.strip("/") if self._socket is None else _db(parts.query)
        if database not in ("", "0"):
            self._hello.append(_pack("SELECT", database))
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None
        self._closed = False

    async def call(self, *args: Any) -> Any:
        """One command's reply; ``StoreUnavailable`` when Redis cannot be had, and a
        ``hiredis.ReplyError`` as Redis answered it.
        """
        for backoff in (*_RETRIES, None):
            try:
                connection = self._connection
                if connection is None or connection.lost is not None:
                    connection = await self._connect()
                return await connection.send(_pack(*args))
            except (Lost, OSError, TimeoutError) as exc:
                if backoff is None or self._closed:
                    raise StoreUnavailable(str(exc) or type(exc).__name__) from exc
                await asyncio.sleep(backoff)
        raise AssertionError("unreachable")

    async def script(self, source: str, sha: str, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA, and EVAL where the server does not know the script (restarted)."""
        try:
            return await self.call("EVALSHA", sha, len(keys), *keys, *args)
        except hiredis.ReplyError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self.call("EVAL", source, len(keys), *keys, *args)

    async def _connect(self) -> _Connection:
        # One connection at a time: the commands waiting for it share it.
        if self._closed:
            raise StoreUnavailable("the Redis store is closed")
        if self._connecting is None:
            # Forgotten as it ends, whether or not a caller still waits for it (all may have
            # been cancelled): a later command never gets an old connection or failure.
            self._connecting = asyncio.ensure_future(self._open())
            self._connecting.add_done_callback(self._opened)
        return await asyncio.shield(self._connecting)

    def _opened(self, connecting: asyncio.Future[_Connection]) -> None:
        if self._connecting is connecting:
            self._connecting = None
        if not connecting.cancelled():
            connecting.exception()  # retrieved: its waiters, if any, raised it

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self._connect_timeout):
            if self._socket is not None:
                _, connection = await loop.create_unix_connection(
                    lambda: _Connection(self._timeout), self._socket
                )
            else:
                _, connection = await loop.create_connection(
                    lambda: _Connection(self._timeout), self._host, self._port, ssl=self._ssl
                )
        try:
            for hello in self._hello:  # AUTH, SELECT: their replies are checked before use
                await connection.send(hello)
        except BaseException:
            connection.close()
            raise
        if self._closed:  # closed while it opened: it would be left open
            connection.close()
            raise StoreUnavailable("the Redis store is closed")
        self._connection = connection
        return connection

    def close(self) -> None:
        self._closed = True
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _db(query: str) -> str:
    return next((v for k, v in parse_qsl(query) if k == "db"), "")


def _pack(*args: Any) -> bytes:
    return hiredis.pack_command(args)


def sha1(script: str) -> str:
    return hashlib.sha1(script.encode()).hexdigest()
