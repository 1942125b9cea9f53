"""What an operator reads: one INFO line per part at start-up, one per input, and warnings
that say what to check when the runtime cannot be reached.
"""

from __future__ import annotations

import logging
import re
import socket
from typing import Any

import aiohttp
import pytest

from slashgate.links import browser_base
from slashgate.server import running
from tests.conftest import ServerFactory, make_settings
from tests.http import serve_subprocess
from tests.ops.test_logs import captured


def lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


async def post(url: str, text: str, conversation: str = "c1") -> Any:
    body = {"conversation": conversation, "user": "u1", "text": text}
    async with aiohttp.ClientSession() as client:
        async with client.post(f"{url}/v1/messages", json=body) as resp:
            assert resp.status == 200
            return await resp.json()


async def test_start_up_says_each_part_and_each_input_is_one_line(
    gateway_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="slashgate")
    async with gateway_server() as server:
        started = lines(caplog)
        assert started[:3] == [
            "runtime: embedded (demo)",
            "store: memory (at most 10000 keys, lost on restart)",
            f"server: listening on {server.url}",
        ]
        assert [line for line in started if line.startswith("channel: ")] == [
            "channel: " + c.describe() for c in server.channels
        ]
        with captured() as stream:  # the text format, as written
            await post(server.url, "/echo hi")
            await post(server.url, "just text", conversation="c2")
            await post(server.url, "/nope")
            await post(server.url, "/echo")
    written = stream.getvalue().splitlines()
    turns = [line.split(": ", 1)[1] for line in written if " slashgate.core: turn " in line]
    assert len(turns) == 4, turns
    # Each field once: the line's own after the message, what it is about in brackets.
    shape = r"turn classification=\S+ command=\S+ outcome=\S+ duration=\d+\.\d+ \[channel=webhook conversation=c\d\]"  # noqa: E501
    assert all(re.fullmatch(shape, line) for line in turns), turns
    said = [re.sub(r" duration=\S+", "", line) for line in turns]
    assert said == [
        "turn classification=supported command=echo outcome=ok [channel=webhook conversation=c1]",
        "turn classification=not_slash command=- outcome=ok [channel=webhook conversation=c2]",
        "turn classification=unsupported command=- outcome=unsupported "
        "[channel=webhook conversation=c1]",
        "turn classification=supported command=echo outcome=generic "
        "[channel=webhook conversation=c1]",
    ]
    assert not any("hi" in line or "just text" in line for line in turns), "no user text"


async def test_a_missing_agent_program_is_a_warning_that_says_what_to_check(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="slashgate")
    settings = make_settings(runtime="pi", pi_command=["no-such-pi-here", "--mode", "rpc"])
    async with running(settings):
        warnings = lines(caplog, logging.WARNING)
    assert warnings[0] == (
        "runtime pi: 'no-such-pi-here' is not an executable file or on PATH: check pi_command "
        "and PATH"
    )


async def test_private_attachment_urls_are_a_warning_at_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="slashgate")
    async with running(make_settings()):
        assert not [w for w in lines(caplog, logging.WARNING) if "allow_private_urls" in w]
    async with running(make_settings(attachment_allow_private_urls=True)):
        warnings = lines(caplog, logging.WARNING)
    assert warnings == [
        "attachment_allow_private_urls is on: POST /v1/messages fetches attachment URLs on "
        "loopback and private networks, and over plain http (internal services, cloud "
        "metadata); it is meant for tests"
    ]


async def test_an_unreachable_electric_server_is_a_warning_that_says_what_to_check(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    caplog.set_level(logging.INFO, logger="slashgate")
    async with running(make_settings(runtime="electric", electric_url=url)) as server:
        reply = (await post(server.url, "hello"))["reply"]
        warnings = lines(caplog, logging.WARNING)
    assert any(
        w.startswith(f"electric runtime unreachable at {url}")
        and "check electric_url and that the Electric Agents server runs" in w
        for w in warnings
    ), warnings
    assert reply["category"] == "generic", "the gateway runs; the input fails with one reply"


async def test_the_start_up_ends_with_the_addresses_to_open() -> None:
    """What ``make run`` prints last: the web chat's page and the API, each as a whole URL
    a terminal makes clickable, and the web chat's one answers with the page.
    """
    async with serve_subprocess() as served, aiohttp.ClientSession() as http:
        async with http.get(f"{served.url}/chat") as page:
            assert page.status == 200 and page.content_type == "text/html"
    said = [line.rstrip("\n") for line in served.output]
    ready = said.index(f"slashgate listening on {served.url}")
    assert said[ready + 1 : ready + 3] == [
        f"API: {served.url}/v1 (described at {served.url}/openapi.json)",
        f"web chat: {served.url}/chat",
    ]


async def test_without_the_web_chat_no_address_is_printed_for_it() -> None:
    async with serve_subprocess(webchat="false") as served:
        pass
    assert not [line for line in served.output if line.startswith("web chat:")]


@pytest.mark.parametrize(
    ("host", "published", "base"),
    [
        ("127.0.0.1", None, "http://127.0.0.1:8080"),
        ("0.0.0.0", None, "http://127.0.0.1:8080"),  # every interface: open it on loopback
        ("0.0.0.0", "127.0.0.1", "http://127.0.0.1:8080"),  # a container's published port
        ("::", "192.0.2.7", "http://192.0.2.7:8080"),
        ("", "0.0.0.0", "http://127.0.0.1:8080"),
        ("::1", None, "http://[::1]:8080"),
    ],
)
def test_the_printed_address_is_one_a_browser_opens(
    host: str, published: str | None, base: str
) -> None:
    assert browser_base(host, published, 8080) == base
