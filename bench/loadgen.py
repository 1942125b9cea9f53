"""A load generator process for the load benches (bench/loadrig.py): Telegram webhook updates
(``/echo m<n>``, each in its own chat) over kept-alive connections, spread round-robin over
the gateways' URLs.

A bare HTTP/1.1 client on asyncio streams (requests built as bytes, answers read by their
Content-Length): a few times cheaper per request than aiohttp's, so that one process drives
several gateways. It prints ``ready``, starts on a line ``go`` from its stdin, and at the end
prints as JSON its CPU seconds (utime + stime) since ``go`` and when it was done
(``time.monotonic``) and how many 503s it was answered. Every update must be answered 200 in
the end.
``python bench/loadgen.py '<json: urls, first, count, secret, connections>'``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from urllib.parse import urlsplit

BUSY_PAUSE = 0.05  # seconds before an update answered 503 is sent again


def request(host: str, path: str, secret: str, n: int) -> bytes:
    update = {
        "update_id": n,
        "message": {
            "message_id": n, "date": 0, "chat": {"id": n, "type": "private"},
            "from": {"id": n, "is_bot": False, "first_name": "B"}, "text": f"/echo m{n}",
            "entities": [{"type": "bot_command", "offset": 0, "length": 5}],
        },
    }  # fmt: skip
    body = json.dumps(update).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"X-Telegram-Bot-Api-Secret-Token: {secret}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def post_all(url: str, numbers: list[int], secret: str) -> int:
    """Each update of ``numbers`` to ``url``, one at a time, over one connection: how many
    503s it took (a gateway with a full intake answers 503; the update is sent again shortly,
    as Telegram delivers it again).
    """
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    path, busy = "/telegram/webhook", 0
    try:
        for n in numbers:
            packed = request(parts.netloc, path, secret, n)
            while True:
                writer.write(packed)
                head = await reader.readuntil(b"\r\n\r\n")
                status = head.split(b" ", 2)[1]
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                answer = await reader.readexactly(length)
                if status == b"200":
                    break
                if status != b"503":
                    raise RuntimeError(f"{url}: {status.decode()} {answer[:200]!r}")
                busy += 1
                await asyncio.sleep(BUSY_PAUSE)
    finally:
        writer.close()
    return busy


async def main(urls: list[str], first: int, count: int, secret: str, connections: int) -> None:
    # Connection c of the process takes every connections-th update; update n goes to
    # gateway n % len(urls), so each connection keeps to one gateway.
    lanes: dict[tuple[int, int], list[int]] = {}
    for n in range(first, first + count):
        lanes.setdefault((n % len(urls), (n // len(urls)) % connections), []).append(n)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    cpu = time.process_time()
    busy = await asyncio.gather(*(post_all(urls[g], ns, secret) for (g, _), ns in lanes.items()))
    end = time.monotonic()
    said = {"cpu": time.process_time() - cpu, "end": end, "busy": sum(busy)}
    print(json.dumps(said), flush=True)


if __name__ == "__main__":
    asyncio.run(main(**json.loads(sys.argv[1])))
