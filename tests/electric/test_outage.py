"""The server down while conversations are open: one warning when the outage starts and one
when it ends, whatever the number of conversations and retries, and none of them about a
turn (each open conversation logged a warning every 5 s, with the turn id of an old turn).
"""

from __future__ import annotations

import json

import pytest

from gateway.runtimes.electric import session
from tests.ops.test_logs import captured

from .conftest import GatewayFactory, say
from .fake_server import FakeElectric

RETRIES = 4  # failed reads of each stream while the server is down


async def test_an_outage_is_one_warning_when_it_starts_and_one_when_it_ends(
    fake: FakeElectric, electric_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "BACKOFF_MAX", 0.05)  # the retries, without their 5 s
    with captured(log_format="json") as logged:
        async with electric_gateway() as server:
            # Opened while the server is down, each conversation's stream reader starts in
            # its next turn (and took that turn's id along for good).
            fake.down = True
            for conversation in ("c1", "c2"):
                assert (await say(server, "hi", conversation))["reply"]["category"] == "generic"
            fake.down = False
            for conversation in ("c1", "c2"):
                assert (await say(server, "hi", conversation))["reply"]["text"] == "hi"
            streams = list(fake.streams)
            before = len(logged.getvalue())
            fake.down = True
            for stream in fake.streams.values():  # the live responses drop with the server
                stream.disconnect_sse(abort=True)
            await fake.until(
                lambda: all(sum(r.status == 503 for r in fake.reads(s)) >= RETRIES for s in streams)
            )
            back = len(fake.requests)
            fake.down = False
            # A reader's next request comes once it applied what the first one read.
            await fake.until(
                lambda: all(sum(r.path == s for r in fake.requests[back:]) >= 2 for s in streams)
            )
            after = await say(server, "again", "c1")

    assert len(streams) == 2
    assert after["reply"]["text"] == "again"
    lines = [json.loads(line) for line in logged.getvalue()[before:].splitlines()]
    warned = [line for line in lines if line["logger"] == "slashgate.electric"]
    assert [line["message"].split(":")[0] for line in warned] == [
        "cannot read the streams of the Electric Agents server at http",
        "the streams of the Electric Agents server at http",
    ]
    started, ended = (line["message"] for line in warned)
    assert started.startswith(
        f"cannot read the streams of the Electric Agents server at {fake.url}: "
    )
    assert ended.startswith(f"the streams of the Electric Agents server at {fake.url} are read")
    assert all("turn_id" not in line and "message_id" not in line for line in warned)
