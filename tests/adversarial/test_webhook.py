"""The webhook (aiohttp) under hostile input: the largest bodies it takes in every kind of
hard text, lone surrogates, header bytes outside ASCII. Each gets its documented reply or a
clear 4xx, /healthz keeps answering, and the conversation goes on.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from slashgate.server import Running
from tests.conftest import ServerFactory

from .common import BOUND, FLAVORS, fill_bytes, healthz_watch, raw_request

LIMIT = 1024 * 1024  # webhook_max_body's default: 1 MiB
TOKEN = "t0ken-for-the-adversary"


def body_of(text: str, conversation: str = "adv") -> bytes:
    data = {"conversation": conversation, "user": "u", "text": text}
    return json.dumps(data, ensure_ascii=False).encode()


def largest(prefix: str, flavor: str) -> bytes:
    """The body of ``prefix`` and ``flavor``'s text, as close to 1 MiB as it gets."""
    text = prefix + fill_bytes(flavor, LIMIT)
    low, high = 0, len(text)  # escapes (\u0000, \") make a body longer than its text
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(body_of(text[:middle])) <= LIMIT else (low, middle - 1)
    return body_of(text[:low])


async def post_raw(
    server: Running, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json", **(headers or {})}
    async with aiohttp.ClientSession() as http:
        request = http.post(f"{server.url}/v1/messages", data=body, headers=headers)
        async with asyncio.timeout(BOUND), request as resp:
            return resp.status, await resp.read()


async def post(
    server: Running, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    status, answer = await post_raw(server, body, headers)
    return status, json.loads(answer)


async def next_works(server: Running, headers: dict[str, str] | None = None) -> None:
    """The conversation takes the next message as if nothing had happened."""
    status, answer = await post(server, body_of("/echo next one"), headers)
    assert (status, answer["reply"]["text"]) == (200, "next one"), answer


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
async def test_a_1_mib_body_of_hard_text_is_answered(
    gateway_server: ServerFactory, flavor: str
) -> None:
    # Made before the watch, for the same reason as the answers are parsed after it.
    command, plain = largest("/echo ", flavor), largest("", flavor)
    assert LIMIT - 8 <= len(command) <= LIMIT  # within a character of the limit
    text = json.loads(command)["text"]
    async with gateway_server() as server:
        async with healthz_watch(server.url):
            status, raw = await post_raw(server, command)
            status_plain, raw_plain = await post_raw(server, plain)
        # Parsed after the watch: the client's work must not hold the loop /healthz runs on.
        answer, answer_plain = json.loads(raw), json.loads(raw_plain)
        assert status == 200, answer
        assert answer["classification"]["command"] == "echo"
        assert answer["reply"]["text"] == answer["classification"]["args"]
        assert text.removeprefix("/echo ").startswith(answer["reply"]["text"][:1000])
        assert len(answer["reply"]["text"]) >= len(text) - 10  # only the ends' spaces go
        assert status_plain == 200, answer_plain
        assert answer_plain["classification"]["kind"] == "not_slash"
        said = answer_plain["reply"]["text"]
        assert said.startswith('You said: "') and said.endswith('"')
        assert len(said) >= len(text) - 10
        await next_works(server)


async def test_a_body_past_1_mib_is_a_413(gateway_server: ServerFactory) -> None:
    body = largest("/echo ", "emoji")
    body = body[:-2] + b"x" * (LIMIT + 1 - len(body)) + body[-2:]
    assert len(body) == LIMIT + 1
    async with gateway_server() as server, healthz_watch(server.url):
        status, answer = await post(server, body)
        assert (status, answer["error"]["code"]) == (413, "too_large")
        await next_works(server)


ENCODED = b'{"conversation": "adv", "user": "u", "text": "/echo \xed\xa0\x80"}'


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (ENCODED, "text"),  # U+D800 encoded as UTF-8 bytes, which UTF-8 forbids
        (body_of("/echo \\ud800").replace(b"\\\\", b"\\"), "text"),  # a lone escape
        (body_of("/echo \\udc00 and \\ud83d\\ude00").replace(b"\\\\", b"\\"), "text"),
        (body_of("hi", conversation="\\ud800").replace(b"\\\\", b"\\"), "conversation"),
        (b'{"conversation": "adv", "user": "u\xff", "text": "hi"}', "user"),
        (
            b'{"conversation": "adv", "user": "u", "text": "hi",'
            b' "attachments": [{"name": "\\udfff.png", "data": "aGk="}]}',
            "attachments.0.name",
        ),
    ],
    ids=["encoded", "escaped", "low-beside-a-pair", "conversation", "bad-byte", "attachment"],
)
async def test_invalid_unicode_is_a_400_naming_the_field(
    gateway_server: ServerFactory, tmp_path: Path, body: bytes, field: str
) -> None:
    # The SQLite store (the default) encodes what it journals: a surrogate there was a 500.
    store = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with gateway_server(**store) as server, healthz_watch(server.url):
        for headers in ({}, {"Idempotency-Key": "k1"}, {"Accept": "text/event-stream"}):
            status, answer = await post(server, body, headers)
            assert status == 400, answer
            assert answer["error"]["code"] == "invalid_text"
            assert answer["error"]["message"].startswith(f"{field}: not valid Unicode text")
        for route in ("/v1/classify", "/v1/permissions/r1"):
            async with aiohttp.ClientSession() as http:
                json_type = {"Content-Type": "application/json"}
                async with http.post(f"{server.url}{route}", data=body, headers=json_type) as resp:
                    assert resp.status == 400
                    assert (await resp.json())["error"]["code"] == "invalid_text"
        await next_works(server, {"Idempotency-Key": "k1"})  # the key was not taken


def head(path: str, *headers: bytes) -> bytes:
    lines = [f"POST {path} HTTP/1.1".encode(), b"Content-Type: application/json", *headers]
    return b"\r\n".join(lines)


AUTH = f"Authorization: Bearer {TOKEN}".encode()


@pytest.mark.parametrize(
    ("header", "status", "named"),
    [
        (b"Idempotency-Key: \xff\xfe", 400, "Idempotency-Key"),
        ("Idempotency-Key: clé-é".encode(), 400, "Idempotency-Key"),  # UTF-8, not ASCII
        (b"Authorization: Bearer \xff" + TOKEN.encode(), 401, "Authorization"),
        ("Authorization: Bearer é".encode(), 401, "Authorization"),
        (b"Authorization: B\xffarer " + TOKEN.encode(), 401, "Authorization"),
    ],
    ids=["bad-bytes-key", "utf8-key", "bad-bytes-token", "utf8-token", "scheme"],
)
async def test_header_bytes_outside_ascii_are_a_4xx_naming_the_header(
    gateway_server: ServerFactory, tmp_path: Path, header: bytes, status: int, named: str
) -> None:
    settings = {
        "store": "sqlite",
        "state_path": tmp_path / "state.sqlite3",
        "webhook_token": SecretStr(TOKEN),
    }
    async with gateway_server(**settings) as server, healthz_watch(server.url):
        headers = [header] if header.startswith(b"Authorization") else [AUTH, header]
        got, answer = await raw_request(server.url, head("/v1/messages", *headers), ENCODED)
        error = json.loads(answer)["error"]
        assert got == status, error
        assert named in error["message"]
        await next_works(server, {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "k"})


async def test_other_headers_outside_ascii_change_nothing(gateway_server: ServerFactory) -> None:
    body = body_of("/echo fine")
    async with gateway_server() as server, healthz_watch(server.url):
        for header in (
            b"Accept: text/\xffevent-stream",
            b"X-Anything: \xff\xfe",
            "User-Agent: Bötchen/1.0 😀".encode(),
        ):
            got, answer = await raw_request(server.url, head("/v1/messages", header), body)
            assert (got, json.loads(answer)["reply"]["text"]) == (200, "fine"), header
        got, answer = await raw_request(
            server.url, head("/v1/messages", b"Content-Encoding: gz\xffip"), body
        )
        assert (got, json.loads(answer)["error"]["code"]) == (415, "unsupported_encoding")
        for control in (b"Idempotency-Key: a\x7fb", b"X-Anything: a\x00b"):
            got, _ = await raw_request(server.url, head("/v1/messages", control), body)
            assert got == 400  # aiohttp's parser refuses control characters in any header
        await next_works(server)


async def test_an_uploaded_file_name_outside_utf8_is_a_400(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    boundary = "adversary"
    form = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="conversation"\r\n\r\nadv\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="user"\r\n\r\nu\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="text"\r\n\r\nhi\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a'
        ).encode()
        + b'\xff\xfe.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n'
        + (f"--{boundary}--\r\n".encode())
    )
    store = {"store": "sqlite", "state_path": tmp_path / "state.sqlite3"}
    async with gateway_server(**store) as server, healthz_watch(server.url):
        request = (
            b"POST /v1/messages HTTP/1.1\r\nIdempotency-Key: up1\r\n"
            + f"Content-Type: multipart/form-data; boundary={boundary}".encode()
        )
        got, answer = await raw_request(server.url, request, form)
        assert got == 400, answer
        assert "name" in json.loads(answer)["error"]["message"]
        await next_works(server, {"Idempotency-Key": "up1"})
