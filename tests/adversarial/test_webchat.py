"""The web chat's HTTP endpoints (the page, /v1/complete, /v1/classify, /v1/messages as
server-sent events) under hostile input: every kind of hard text at the sizes the page can
send, lone surrogates, a completion query past the request line's limit. Each gets its
documented answer or a clear 4xx, /healthz keeps answering, and the conversation goes on.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest

from slashgate.server import Running
from tests.conftest import ServerFactory
from tests.http import read_events

from .common import BOUND, FLAVORS, fill, healthz_watch

LONG = 20_000  # characters: far past anything typed; each SSE line stays within 512 KiB


async def send(http: aiohttp.ClientSession, server: Running, text: str) -> dict[str, Any]:
    """POST /v1/messages as the page does (SSE); the ``reply`` event's data."""
    body = {"conversation": "page", "user": "me", "text": text}
    headers = {"Accept": "text/event-stream"}
    async with asyncio.timeout(BOUND):
        async with http.post(f"{server.url}/v1/messages", json=body, headers=headers) as resp:
            assert resp.status == 200
            events = [event async for event in read_events(resp)]
    assert events[0][0] == "accepted" and events[-1][0] == "reply"
    return dict(events[-1][1])


@pytest.mark.parametrize("flavor", sorted(FLAVORS))
async def test_the_page_s_endpoints_take_hard_text(
    gateway_server: ServerFactory, flavor: str
) -> None:
    text = fill(flavor, LONG)
    async with gateway_server() as server, aiohttp.ClientSession() as http:
        async with healthz_watch(server.url):
            async with http.get(f"{server.url}/chat") as resp:
                assert resp.status == 200
            short = "/ec" + fill(flavor, 40)  # completion: the text travels in the URL
            query = f"conversation=page&text={quote(short)}&cursor=3"
            async with http.get(f"{server.url}/v1/complete?{query}") as resp:
                assert resp.status == 200
                assert [i["name"] for i in (await resp.json())["items"]] == ["echo"]
            classify = {"conversation": "page", "text": "/echo " + text}
            async with http.post(f"{server.url}/v1/classify", json=classify) as resp:
                assert resp.status == 200
                assert (await resp.json())["classification"]["command"] == "echo"
            reply = await send(http, server, "/echo " + text)
            plain = await send(http, server, text)
        assert reply["reply"]["text"] == reply["classification"]["args"]
        assert len(reply["reply"]["text"]) >= LONG - 10  # only the ends' spaces go
        assert plain["reply"]["text"].startswith('You said: "')
        assert (await send(http, server, "/echo next one"))["reply"]["text"] == "next one"


async def test_lone_surrogates_and_an_overlong_completion_are_a_4xx(
    gateway_server: ServerFactory,
) -> None:
    async with gateway_server() as server, aiohttp.ClientSession() as http:
        async with healthz_watch(server.url):
            for route, body in (
                ("/v1/classify", b'{"conversation": "page", "text": "/echo \\ud800"}'),
                ("/v1/messages", b'{"conversation": "page", "user": "me", "text": "\\udfff"}'),
                ("/v1/permissions/r1", b'{"conversation": "page", "option": "\\ud800"}'),
            ):
                json_type = {"Content-Type": "application/json"}
                async with http.post(f"{server.url}{route}", data=body, headers=json_type) as resp:
                    assert resp.status == 400, route
                    error = (await resp.json())["error"]
                    assert error["code"] == "invalid_text"
                    assert ": not valid Unicode text" in error["message"]
            # Bytes that are not UTF-8 in the query are decoded as U+FFFD: nothing to refuse.
            async with http.get(f"{server.url}/v1/complete?text=%2Fe%ED%A0%80") as resp:
                assert resp.status == 200
                assert (await resp.json())["items"] == []
            # Past the request line's limit (about 8 KB): refused, as docs/webchat.md says.
            query = quote("/echo " + fill("emoji", 3_000))
            async with http.get(f"{server.url}/v1/complete?text={query}") as resp:
                assert 400 <= resp.status < 500
        assert (await send(http, server, "/echo next one"))["reply"]["text"] == "next one"
