"""Files go to the Electric entity as compositor parts in the composer_input payload."""

from __future__ import annotations

import base64

import aiohttp

from contract import composer_input_problems

from .fake_server import FakeElectric

PNG = b"\x89PNG\r\n\x1a\n" + b"pixels" * 10


async def test_files_reach_the_entity_as_file_attachment_parts(
    fake: FakeElectric, electric_gateway
) -> None:
    files = [
        {"name": "chart.png", "media_type": "image/png", "data": base64.b64encode(PNG).decode()},
        {"name": "notes.txt", "data": base64.b64encode(b"hi").decode()},
    ]
    body = {"conversation": "c1", "user": "alice", "text": "look", "attachments": files}
    async with electric_gateway() as server, aiohttp.ClientSession() as http:
        async with http.post(f"{server.url}/v1/messages", json=body) as response:
            assert response.status == 200, await response.text()
            answer = await response.json()
    assert answer["reply"]["text"] == "look: got chart.png (image/png, 68 bytes), notes.txt " \
        "(text/plain, 2 bytes)"  # fmt: skip
    (send,) = fake.sends()
    payload = send.body["payload"]
    assert composer_input_problems(payload) == []  # still what the server validates
    assert payload["attachments"] == [
        {"type": "file-attachment", "name": "chart.png", "mime": "image/png", "size": len(PNG),
         "data": base64.b64encode(PNG).decode()},
        {"type": "file-attachment", "name": "notes.txt", "mime": "text/plain", "size": 2,
         "data": base64.b64encode(b"hi").decode()},
    ]  # fmt: skip
