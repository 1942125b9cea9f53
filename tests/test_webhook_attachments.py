"""Files on ``POST /v1/messages``: multipart uploads, base64 and fetched URLs, the limits."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.acp.prompts import decoded, prompts, recording_agent
from tests.conftest import ServerFactory
from tests.http import serve_app

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 50
PDF = b"%PDF-1.4 the spec"


def form(text: str, *files: tuple[str, bytes, str], **fields: str) -> aiohttp.FormData:
    data = aiohttp.FormData(quote_fields=False)  # names as curl sends them
    for name, value in {"conversation": "c1", "user": "ann", "text": text, **fields}.items():
        data.add_field(name, value)
    for name, body, kind in files:
        data.add_field("file", body, filename=name, content_type=kind)
    return data


def message(text: str, *attachments: dict[str, Any]) -> dict[str, Any]:
    return {"conversation": "c1", "user": "ann", "text": text, "attachments": list(attachments)}


async def post(url: str, body: Any, **headers: str) -> tuple[int, Any, Any]:
    """(status, JSON body, headers) of POST /v1/messages with a form or a JSON body."""
    kwargs = {"data": body} if isinstance(body, aiohttp.FormData) else {"json": body}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{url}/v1/messages", headers=headers, **kwargs) as resp,
    ):
        return resp.status, await resp.json(), resp.headers


class Files:
    """A file server on loopback, standing in for the web: what it served, who asked."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.url = ""
        self.hang = asyncio.Event()  # /slow answers only once the server stops

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        name = request.match_info["name"]
        if name == "chart.png":
            return web.Response(body=PNG, content_type="image/png")
        if name == "spec.pdf":
            return web.Response(body=PDF, content_type="application/pdf")
        if name == "moved":
            raise web.HTTPFound("/files/chart.png")
        if name == "endless":  # no Content-Length: only reading tells the size
            response = web.StreamResponse()
            await response.prepare(request)
            for _ in range(100):
                await response.write(b"x" * 1000)
            await response.write_eof()
            return response
        if name == "slow":
            await self.hang.wait()
        raise web.HTTPNotFound()


@asynccontextmanager
async def file_server() -> AsyncIterator[Files]:
    files = Files()
    app = web.Application()
    app.router.add_get("/files/{name}", files.handle)
    async with serve_app(app) as url:
        files.url = f"{url}/files"
        try:
            yield files
        finally:
            files.hang.set()  # before the server waits for its handlers


async def test_a_multipart_upload_reaches_the_acp_agent_as_image_and_resource_blocks(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path, caps="image,audio,embeddedContext")
    upload = form(
        "what do these say?",
        ("chart.png", PNG, "image/png"),
        ("spec.pdf", PDF, "application/pdf"),
        ("readme.txt", b"plain words", "text/plain"),
        ("note.ogg", b"OggS voice", "audio/ogg"),
        ("../../build.zip", b"PK\x03\x04", "application/zip"),
    )
    async with gateway_server(runtime) as served:
        status, body, _ = await post(served.url, upload)
    assert status == 200, body
    [blocks] = prompts(record)
    assert [b["type"] for b in blocks] == ["text", "image", "resource", "resource", "audio", "text"]
    assert decoded(blocks[1]) == PNG and decoded(blocks[2]) == PDF
    assert blocks[3]["resource"] == {
        "uri": "attachment:readme.txt", "mimeType": "text/plain", "text": "plain words"
    }  # fmt: skip
    assert (blocks[4]["mimeType"], decoded(blocks[4])) == ("audio/ogg", b"OggS voice")
    # Binary no model reads is never inlined, even to an agent that takes embedded context;
    # and an uploaded name loses its directories.
    assert blocks[5]["text"] == (
        "[attached file: build.zip (application/zip, 4 bytes); its contents are not included]"
    )
    assert body["reply"]["text"].startswith("echo: text:what do these say? | image:image/png:")


async def test_an_agent_without_image_support_gets_the_descriptor(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path, caps="")
    async with gateway_server(runtime) as served:
        status, body, _ = await post(served.url, form("", ("chart.png", PNG, "image/png")))
    assert status == 200, body
    [blocks] = prompts(record)
    assert blocks == [
        {
            "type": "text",
            "text": "[attached file: chart.png (image/png, 308 bytes); "
            "its contents are not included]",
        }
    ]


async def test_base64_attachments_in_json_reach_the_embedded_runtime(
    gateway_server: ServerFactory,
) -> None:
    data = base64.b64encode(b"col\n1\n").decode()
    async with gateway_server() as served:
        status, body, _ = await post(
            served.url, message("", {"name": "t.csv", "media_type": "text/csv", "data": data})
        )
    assert status == 200, body
    assert body["reply"]["text"] == "You sent t.csv (text/csv, 6 bytes)."


async def test_a_url_is_fetched_and_its_address_kept_for_the_agent(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path, caps="image")
    async with (
        file_server() as files,
        gateway_server(runtime, attachment_allow_private_urls=True) as served,
    ):
        status, body, _ = await post(
            served.url,
            message(
                "compare",
                {"name": "chart.png", "url": f"{files.url}/moved"},  # redirects to the image
                {"name": "spec.pdf", "url": f"{files.url}/spec.pdf"},
            ),
        )
    assert status == 200, body
    [blocks] = prompts(record)
    assert [b["type"] for b in blocks] == ["text", "image", "resource_link"]
    assert (blocks[1]["mimeType"], decoded(blocks[1])) == ("image/png", PNG)
    assert blocks[2] == {
        "type": "resource_link",
        "name": "spec.pdf",
        "uri": f"{files.url}/spec.pdf",
        "mimeType": "application/pdf",
        "size": len(PDF),
    }
    assert files.requests == ["/files/moved", "/files/chart.png", "/files/spec.pdf"]


NOT_DOWNLOADED = "chart.png could not be downloaded. Nothing was sent to the agent."


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1:{port}/files/chart.png", "only https URLs are fetched"),
        ("ftp://127.0.0.1/x", "only https URLs are fetched"),
        # Whatever the reason, the same words: nothing tells a refused address from a name
        # that is not known (issue 32).
        ("https://127.0.0.1:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://[::1]:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://localhost:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://no-such-name.invalid/files/chart.png", NOT_DOWNLOADED),
        # IPv6 forms that carry 127.0.0.1: judged by it (gateway/addresses.py)
        ("https://[::127.0.0.1]:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://[::ffff:127.0.0.1]:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://[64:ff9b::127.0.0.1]:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://[2002:7f00:1::1]:{port}/files/chart.png", NOT_DOWNLOADED),
        ("https://[2001:0:808:808::80ff:fffe]:{port}/files/chart.png", NOT_DOWNLOADED),
    ],
)
async def test_without_the_test_setting_only_public_https_urls_are_fetched(
    gateway_server: ServerFactory, url: str, reason: str
) -> None:
    async with file_server() as files, gateway_server() as served:
        port = files.url.split(":")[2].split("/")[0]
        status, body, _ = await post(
            served.url, message("look", {"name": "chart.png", "url": url.format(port=port)})
        )
    assert status == 422
    assert body["error"]["code"] == "attachment_unavailable"
    assert reason in body["error"]["message"]
    assert files.requests == []


async def test_an_address_carrying_a_private_ipv4_address_is_refused_before_any_connection(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """``::127.0.0.1`` passes ``ipaddress``'s ``is_global``: it was connected to."""
    caplog.set_level(logging.INFO, logger="slashgate.webhook")
    async with gateway_server() as served:
        for host in ("::127.0.0.1", "64:ff9b::a00:1", "2002:a9fe:a9fe::1"):
            attachment = {"name": "chart.png", "url": f"https://[{host}]:9/chart.png"}
            status, body, _ = await post(served.url, message("look", attachment))
            assert (status, body["error"]["message"]) == (422, NOT_DOWNLOADED)
    said = [r.getMessage() for r in caplog.records if r.name == "slashgate.webhook"]
    assert said == [  # in the log, for the operator; the URL's host as yarl writes it
        f"attachment not downloaded from {host}: not a public address"
        for host in ("::7f00:1", "64:ff9b::a00:1", "2002:a9fe:a9fe::1")
    ]


async def test_oversize_files_are_refused_with_one_clear_error(
    gateway_server: ServerFactory,
) -> None:
    limits = {"attachment_max_bytes": 50_000, "attachment_max_total": 60_000}
    async with (
        file_server() as files,
        gateway_server(attachment_allow_private_urls=True, **limits) as served,
    ):
        big = form("x", ("big.bin", b"b" * 50_001, "application/octet-stream"))
        status, body, _ = await post(served.url, big)
        assert (status, body["error"]["code"]) == (413, "attachment_too_large")
        assert body["error"]["message"] == (
            "big.bin is over the limit of 50 kB per file. Nothing was sent to the agent."
        )
        two = form("x", ("a.bin", b"a" * 40_000, "text/plain"), ("b.bin", b"b" * 40_000, "x/y"))
        status, body, _ = await post(served.url, two)
        assert status == 413 and "over the limit of 60 kB per message" in body["error"]["message"]
        endless = message("x", {"name": "endless.bin", "url": f"{files.url}/endless"})
        status, body, _ = await post(served.url, endless)
        assert status == 413 and body["error"]["message"] == (
            "endless.bin is over the limit of 50 kB per file. Nothing was sent to the agent."
        )
        status, body, _ = await post(served.url, message("/echo still fine"))
        assert body["reply"]["text"] == "still fine"


async def test_a_url_that_does_not_answer_in_time_is_refused(
    gateway_server: ServerFactory,
) -> None:
    async with (
        file_server() as files,
        gateway_server(attachment_allow_private_urls=True, attachment_fetch_timeout=0.2) as served,
    ):
        slow = message("x", {"name": "slow.png", "url": f"{files.url}/slow"})
        status, body, _ = await post(served.url, slow)
        missing = message("x", {"name": "gone.png", "url": f"{files.url}/gone"})
        status_missing, body_missing, _ = await post(served.url, missing)
    assert (status, body["error"]["code"]) == (422, "attachment_unavailable")
    assert body["error"]["message"] == (
        "slow.png could not be downloaded. Nothing was sent to the agent."
    )
    assert status_missing == 422 and body_missing["error"]["message"] == (
        "gone.png could not be downloaded. Nothing was sent to the agent."
    )


@pytest.mark.parametrize(
    ("attachment", "needle"),
    [
        ({"name": "a.png", "data": "not base64!"}, "attachments.0.data: not base64"),
        ({"name": "a.png", "data": "AAAA", "url": "https://x.example/a"}, "either data"),
        ({"name": "a.png"}, "either data"),
        ({"data": "AAAA"}, "name"),
    ],
)
async def test_malformed_attachments_are_a_400(
    gateway_server: ServerFactory, attachment: dict[str, Any], needle: str
) -> None:
    async with gateway_server() as served:
        status, body, _ = await post(served.url, message("x", attachment))
    assert (status, body["error"]["code"]) == (400, "invalid_request")
    assert needle in body["error"]["message"]


async def test_a_repeated_upload_with_the_same_key_runs_once(
    gateway_server: ServerFactory, tmp_path: Path
) -> None:
    runtime, record = recording_agent(tmp_path)
    async with gateway_server(runtime) as served:
        first = await post(served.url, form("hi", ("a.png", PNG, "image/png")), **{
            "Idempotency-Key": "k1"})  # fmt: skip
        again = await post(served.url, form("hi", ("a.png", PNG, "image/png")), **{
            "Idempotency-Key": "k1"})  # fmt: skip
        other = await post(served.url, form("hi", ("a.png", PNG + b"!", "image/png")), **{
            "Idempotency-Key": "k1"})  # fmt: skip
    assert first[0] == again[0] == 200 and first[1] == again[1]
    assert again[2].get("Idempotent-Replayed") == "true"
    assert other[0] == 422  # the same key with another file
    assert len(prompts(record)) == 1


async def test_files_sent_with_a_gateway_command_are_said_to_be_left_out(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server() as served:
        status, body, _ = await post(served.url, form("/status", ("a.png", PNG, "image/png")))
    assert status == 200 and body["forwarded"] is None
    assert body["reply"]["text"].endswith(
        "\n\n_(the attached files were not sent: gateway commands take no files)_"
    )


def _part(headers: str, body: bytes) -> bytes:
    return b"--x\r\n" + headers.encode() + b"\r\n\r\n" + body + b"\r\n"


_TEXT = 'Content-Disposition: form-data; name="text"'
_FILE = 'Content-Disposition: form-data; name="file"; filename="a.bin"'


@pytest.mark.parametrize(
    ("content_type", "body", "needle"),
    [
        ("multipart/form-data", _part(_TEXT, b"hi"), "boundary"),
        ("multipart/form-data; boundary=x", b"garbage", "malformed multipart body"),
        ("multipart/form-data; boundary=x", _part(_FILE, b"abc")[:-2], "malformed multipart"),
        ("multipart/form-data; boundary=x", _part(_TEXT, b"\xff\xfe") + b"--x--\r\n", "UTF-8"),
        ("multipart/form-data; boundary=x", _part(_FILE, b"abc") + b"--x--\r\n", "conversation"),
        (
            "multipart/form-data; boundary=x",
            _part("Content-Type: multipart/mixed; boundary=y", b"--y\r\n\r\nz\r\n--y--")
            + b"--x--\r\n",
            "nested",
        ),
    ],
)
async def test_malformed_forms_are_a_400(
    gateway_server: ServerFactory, content_type: str, body: bytes, needle: str
) -> None:
    async with gateway_server() as served, aiohttp.ClientSession() as http:
        async with http.post(
            f"{served.url}/v1/messages", data=body, headers={"Content-Type": content_type}
        ) as resp:
            answer = await resp.json()
    assert (resp.status, answer["error"]["code"]) == (400, "invalid_request")
    assert needle in answer["error"]["message"]
