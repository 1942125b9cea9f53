"""A big message's answer is built, encoded and written off the event loop (issue 10): the
client gets the very bytes the small path writes."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from channels.webhook import answer
from gateway import offload
from tests.conftest import ServerFactory

# A pasted report: references (thousands of nodes), an emoji (escaped in the JSON).
LINE = "see @file:src/a.py again 😀 and @branch:main, @symbol:Gateway \"quoted\" \\ /x\n"
TEXT = "/echo " + LINE * (offload.THRESHOLD // len(LINE) + 1)


async def _post(url: str, text: str) -> tuple[bytes, str, str | None]:
    body = {"conversation": "big", "user": "u1", "text": text}
    async with aiohttp.ClientSession() as client:
        async with client.post(f"{url}/v1/messages", json=body) as response:
            assert response.status == 200
            raw = await response.read()
            return raw, response.headers["Content-Type"], response.headers.get("Content-Length")


async def test_a_big_answer_has_the_bytes_of_the_small_path(
    gateway_server: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with gateway_server() as server:
        big = await _post(server.url, TEXT)
        monkeypatch.setattr(offload, "THRESHOLD", 10 * len(TEXT))  # everything on the loop
        small = await _post(server.url, TEXT)
    assert big == small
    raw, content_type, length = big
    assert content_type == "application/json; charset=utf-8"
    assert length == str(len(raw))
    answer_ = json.loads(raw)
    assert answer_["reply"]["text"] == TEXT.removeprefix("/echo ").strip()
    assert len(answer_["forwarded"]["payload"]["nodes"]) > 3 * answer.SLICE
    assert raw == json.dumps(answer_).encode()


def _body(items: int) -> dict[str, Any]:
    nodes = [{"kind": "text", "start": i, "end": i + 1, "raw": "é\n\"😀"} for i in range(items)]
    return {
        "conversation": "c",
        "classification": {"kind": "supported", "command": "echo", "args": ""},
        "forwarded": {"type": "composer_input", "payload": {"source": "😀", "nodes": nodes}},
        "reply": {"text": "x", "category": None, "usage": {}, "nested": [[], {}, [1.5, True]]},
    }


@pytest.mark.parametrize("items", [0, 1, answer.SLICE, answer.SLICE + 1, 3 * answer.SLICE + 7])
def test_the_sliced_encoding_is_json_dumps(items: int) -> None:
    body = _body(items)
    assert answer.sliced_json(body) == json.dumps(body).encode()
