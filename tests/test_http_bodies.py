"""Request bodies as clients really send them: in pieces, chunked, compressed, cut short; and a
few hundred malformed raw requests, none of which gets a 5xx or stops the server.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import random
import zlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from pydantic import SecretStr

from slashgate.server import Running
from tests.conftest import ServerFactory
from tests.slack.slack_fake import BOT_TOKEN, SIGNING_SECRET, fake_slack
from tests.telegram.fake_bot_api import FakeBotAPI

SECRET = "s3cret_for-the-fuzz"
WAIT = 10.0


def message(text: str) -> bytes:
    return json.dumps({"conversation": "c1", "user": "me", "text": text}).encode()


async def pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    """The body in small pieces, each sent on its own (a slow client, or chunked encoding)."""
    for start in range(0, len(data), size):
        yield data[start : start + size]
        await asyncio.sleep(0)


async def post(
    server: Running, data: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", **(headers or {})}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{server.url}/v1/messages", data=data, headers=headers) as resp:
            return resp.status, await resp.json(content_type=None)


async def test_a_200_kb_body_sent_in_pieces_is_read_whole(gateway_server: ServerFactory) -> None:
    text = "/echo " + "é" * 100_000  # 200 KB of UTF-8
    body = message(text)
    async with gateway_server() as server:
        status, answer = await post(
            server,
            pieces(body, 7_000),
            {"Content-Type": "application/json", "Content-Length": str(len(body))},
        )
    assert status == 200, answer
    assert answer["reply"]["text"] == text.removeprefix("/echo ")


async def test_a_chunked_body_over_the_limit_is_a_413(gateway_server: ServerFactory) -> None:
    body = message("/echo " + "x" * 5_000)
    async with gateway_server(webhook_max_body=4_096) as server:
        status, answer = await post(server, pieces(body, 1_000))  # no Content-Length: chunked
        assert status == 413
        assert answer["error"]["code"] == "too_large"
        status, answer = await post(server, pieces(message("/echo fits"), 100))
        assert (status, answer["reply"]["text"]) == (200, "fits")


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # no zlib header
        ("identity", lambda data: data),
    ],
    ids=["gzip", "x-gzip", "deflate", "raw-deflate", "identity"],
)
async def test_compressed_bodies_are_decoded(
    gateway_server: ServerFactory, coding: str, encode: Any
) -> None:
    async with gateway_server() as server:
        status, answer = await post(
            server, encode(message("/echo squeezed")), {"Content-Encoding": coding}
        )
    assert (status, answer["reply"]["text"]) == (200, "squeezed")


async def test_encodings_that_cannot_be_taken(gateway_server: ServerFactory) -> None:
    bomb = gzip.compress(b" " * 50_000_000)  # 50 MB of spaces in about 50 KB
    async with gateway_server() as server:
        cases = [
            ({"Content-Encoding": "br"}, message("/echo x"), 415, "unsupported_encoding"),
            ({"Content-Encoding": "gzip, br"}, message("/echo x"), 415, "unsupported_encoding"),
            ({"Content-Encoding": "gzip"}, b"not gzip at all", 400, "malformed_encoding"),
            ({"Content-Encoding": "gzip"}, gzip.compress(message("x"))[:-9], 400,
             "malformed_encoding"),
            ({"Content-Encoding": "gzip"}, bomb, 413, "too_large"),
        ]  # fmt: skip
        for headers, body, expected, code in cases:
            status, answer = await post(server, body, headers)
            assert (status, answer["error"]["code"]) == (expected, code), (headers, answer)


# -- raw requests ----------------------------------------------------------------------------

PATHS = ["/v1/messages", "/v1/commands", "/telegram/webhook", "/slack/events", "/healthz", "/"]
METHODS = ["POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "BREW", "P\x00ST", ""]
GOOD = message("/echo hi")


def raw_request(rng: random.Random) -> tuple[bytes, bool]:
    """One malformed (or odd) request, and whether to close the writing side after it."""
    method = rng.choice(METHODS)
    path = rng.choice([*PATHS, "", "*", "/v1/messages?x=%ZZ", "/" + "a" * 9000, "/\xff"])
    version = rng.choice(["HTTP/1.1", "HTTP/1.0", "HTTP/9.9", "HTTP/1.1 extra", ""])
    body = rng.choice(
        [
            GOOD,
            b"",
            b"{",
            b"[" * 100_000,
            b"\xff\xfe garbage",
            gzip.compress(GOOD),
            b"null",
            json.dumps({"conversation": 1, "user": [], "text": {}}).encode(),
            json.dumps({"update_id": "x", "message": 5}).encode(),
            bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))),
        ]
    )
    headers = ["Host: 127.0.0.1"]
    choices: list[str] = [
        f"Content-Length: {len(body)}",
        f"Content-Length: {len(body) + rng.randint(1, 50)}",  # truncated body
        f"Content-Length: -{len(body)}",
        "Content-Length: abc",
        f"Content-Length: {len(body)}\r\nContent-Length: {len(body) + 1}",
        "Transfer-Encoding: chunked",
        f"Transfer-Encoding: chunked\r\nContent-Length: {len(body)}",
        "Transfer-Encoding: gzip, chunked",
    ]
    framing = rng.choice(choices)
    headers.append(framing)
    for extra in rng.sample(
        [
            "Content-Type: application/json",
            "Content-Type: text/plain; charset=nope",
            "Content-Encoding: gzip",
            "Content-Encoding: br",
            "Content-Encoding: deflate, gzip",
            "Accept: text/event-stream",
            "Authorization: Bearer x",
            f"X-Telegram-Bot-Api-Secret-Token: {SECRET}",
            "X-Slack-Request-Timestamp: nope",
            "X-Slack-Signature: v0=00",
            "Expect: 100-continue",
            "Idempotency-Key: k",
            "Bad Header: x",
            "X-Long: " + "b" * 10_000,
            "\x01: ctl",
            "Connection: keep-alive",
            "Connection: close",
        ],
        rng.randint(0, 5),
    ):
        headers.append(extra)
    if "chunked" in framing:
        size = rng.choice([f"{len(body):x}", "zz", f"{len(body) + 5:x}", "-1", "1;ext=1"])
        payload = f"{size}\r\n".encode() + body + rng.choice([b"\r\n0\r\n\r\n", b"\r\n", b""])
    else:
        payload = body
    head = f"{method} {path} {version}\r\n" + "\r\n".join(headers) + "\r\n\r\n"
    return head.encode("utf-8", "surrogateescape") + payload, rng.random() < 0.5


async def exchange(port: int, data: bytes, half_close: bool) -> bytes:
    """Send ``data`` on a new connection; whatever came back before the server closed it (or
    it went quiet).
    """
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        if half_close:
            writer.write_eof()
        await writer.drain()
        answer = b""
        try:
            async with asyncio.timeout(1.0):  # a truncated body: the server waits for the rest
                while chunk := await reader.read(65536):
                    answer += chunk
        except TimeoutError:
            pass
        return answer
    except ConnectionError:
        return b""
    finally:
        writer.close()


async def test_malformed_raw_requests_never_get_a_5xx(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(20261123)
    async with (
        FakeBotAPI() as telegram,
        fake_slack() as slack,
        gateway_server(
            telegram_token=SecretStr(telegram.token),
            telegram_secret=SecretStr(SECRET),
            telegram_api_base=telegram.url,
            telegram_mode="webhook",
            slack_bot_token=SecretStr(BOT_TOKEN),
            slack_signing_secret=SecretStr(SIGNING_SECRET),
            slack_api_base=slack.api_base,
        ) as server,
    ):
        port = int(server.url.rsplit(":", 1)[1])
        statuses: list[int] = []
        unanswered = 0
        with caplog.at_level(logging.INFO):
            requests = [raw_request(rng) for _ in range(300)]
            for start in range(0, len(requests), 30):  # 30 connections at a time
                batch = requests[start : start + 30]
                answers = await asyncio.gather(*(exchange(port, *r) for r in batch))
                for (data, half_closed), answer in zip(batch, answers, strict=True):
                    lines = [line for line in answer.split(b"\r\n") if line.startswith(b"HTTP/")]
                    unanswered += not lines and not half_closed
                    for line in lines:
                        status = int(line.split()[1])
                        statuses.append(status)
                        assert status < 500, (data[:300], answer[:500])
            async with aiohttp.ClientSession() as http:  # still serving, and still right
                json_type = {"Content-Type": "application/json"}
                async with http.post(
                    f"{server.url}/v1/messages", data=GOOD, headers=json_type
                ) as resp:
                    assert resp.status == 200
                    assert (await resp.json())["reply"]["text"] == "hi"
        # A client that closed its side gets no answer; of the others, only those whose body
        # never came whole (the server waits for the rest) may go unanswered.
        assert len(statuses) > 100 and unanswered < 15, (len(statuses), unanswered)
        # aiohttp's own log of requests its parser refused is the logging setup's to tame.
        ours = [r for r in caplog.records if r.name.startswith("slashgate") and r.exc_info]
        assert ours == [], ours[:3]
