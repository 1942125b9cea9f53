"""The walk of one warmed-up input per channel through slashgate's own code: how many of its
files run, and how often the way turns back into a file it had left.

``python bench/walks.py [CHANNEL ...] [--files]`` (default: ``telegram slack discord``) serves
slashgate in this process on the embedded runtime, the memory store and open access policies
(bench/loadrig.py's ``OPEN_ACCESS``), against the bench's fake platforms (bench/platforms.py,
bench/discord.py), and sends each channel's input three times in one conversation: two warm
it up (the session opened, the caches filled), the third is traced with ``sys.setprofile``
from before its request is sent until ``SETTLE`` seconds after its reply reached the fake
platform (its last steps: the journal entry dropped, the log line). The warm-up's own last
steps are over (``SETTLE`` seconds) before the trace starts: they are not the traced input's.

- Telegram: the webhook update ``/echo hi`` in a private chat, through to sendMessage;
- Slack: the slash command ``/agent echo hi``, through to its reply;
- Discord: the interaction ``/echo arguments:hi``, through to the original response's edit.

Printed per channel: ``files``, the first-party files (contract/, gateway/, channels/,
slashgate/) of which any code ran; ``returns``, the calls into a file from another file (or
from the event loop) after the walk had been in that file before: a file entered three times
is two returns. A call within one file is not an entry, and neither is a coroutine resumed
after an await (the walk goes on where it was). ``--files`` lists each file with its entries.
Nothing here is a test: no figure fails the run.
"""

from __future__ import annotations

import argparse
import asyncio
import dis
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import aiohttp
from nacl.signing import SigningKey

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.discord import APPLICATION, TOKEN, USER, FakeDiscord, signed  # noqa: E402
from bench.load import slack_command  # noqa: E402
from bench.loadrig import OPEN_ACCESS  # noqa: E402
from bench.platforms import FakePlatform, FakeSlack, FakeTelegram  # noqa: E402
from bench.servers import SLACK_SECRET, SLACK_TOKEN, TELEGRAM_SECRET, TELEGRAM_TOKEN  # noqa: E402

CHANNELS = ("telegram", "slack", "discord")
LAYERS = ("contract", "gateway", "channels", "slashgate")
FIRST_PARTY = tuple(f"{ROOT / layer}{os.sep}" for layer in LAYERS)
SETTLE = 0.05  # seconds traced after the reply: far more than the input's last steps take
WARM_UP = 2  # inputs before the traced one
REPLY_WAIT = 30.0

Send = Callable[[aiohttp.ClientSession, str, int], Awaitable[None]]


class Walk:
    """The profile hook: files that ran, and each file's entries (calls from elsewhere)."""

    def __init__(self) -> None:
        self.ran: set[str] = set()
        self.entries: Counter[str] = Counter()
        self._starts: dict[CodeType, int] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        file = code.co_filename
        if not file.startswith(FIRST_PARTY):
            return
        self.ran.add(file)
        if frame.f_lasti > self._start(code):  # a coroutine or generator resumed
            return
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(FIRST_PARTY):
            caller = caller.f_back
        if caller is None or caller.f_code.co_filename != file:
            self.entries[file] += 1

    def _start(self, code: CodeType) -> int:
        """Where a fresh call of ``code`` stands at its ``call`` event: its first RESUME."""
        start = self._starts.get(code)
        if start is None:
            resume = (i.offset for i in dis.get_instructions(code) if i.opname == "RESUME")
            start = self._starts[code] = next(resume, 0)
        return start

    @property
    def returns(self) -> int:
        return sum(self.entries.values()) - len(self.entries)


def settings_of(channel: str, api: str, public_key: str) -> dict[str, Any]:
    from pydantic import SecretStr

    if channel == "telegram":
        return {
            "telegram_token": SecretStr(TELEGRAM_TOKEN),
            "telegram_secret": SecretStr(TELEGRAM_SECRET),
            "telegram_api_base": api,
        }
    if channel == "slack":
        return {
            "slack_bot_token": SecretStr(SLACK_TOKEN),
            "slack_signing_secret": SecretStr(SLACK_SECRET),
            "slack_api_base": api,
        }
    return {
        "discord_token": SecretStr(TOKEN),
        "discord_public_key": public_key,
        "discord_api_base": api,
    }


def telegram(fake: FakePlatform) -> Send:
    async def send(session: aiohttp.ClientSession, url: str, n: int) -> None:
        update = {
            "update_id": n,
            "message": {
                "message_id": n, "date": 1700000000, "text": "/echo hi",
                "chat": {"id": 42, "type": "private", "first_name": "Ann"},
                "from": {"id": 42, "is_bot": False, "first_name": "Ann"},
                "entities": [{"type": "bot_command", "offset": 0, "length": 5}],
            },
        }  # fmt: skip
        reply = fake.expect("42")
        headers = {"X-Telegram-Bot-Api-Secret-Token": TELEGRAM_SECRET}
        async with session.post(f"{url}/telegram/webhook", json=update, headers=headers) as r:
            assert r.status == 200, r.status
        assert await asyncio.wait_for(reply, REPLY_WAIT) == "hi"

    return send


def slack(fake: FakeSlack) -> Send:
    async def send(session: aiohttp.ClientSession, url: str, n: int) -> None:
        body, headers = slack_command("C1", fake.response_url_for("C1"))
        reply = fake.expect("C1")
        async with session.post(f"{url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 200, r.status
        assert "hi" in await asyncio.wait_for(reply, REPLY_WAIT)

    return send


def discord(fake: FakeDiscord, key: SigningKey) -> Send:
    async def send(session: aiohttp.ClientSession, url: str, n: int) -> None:
        payload = {
            "id": str(n), "application_id": APPLICATION, "type": 2, "token": f"t{n}",
            "version": 1, "channel_id": "500", "channel": {"id": "500", "type": 0},
            "user": USER, "locale": "en-US", "app_permissions": "0", "entitlements": [],
            "authorizing_integration_owners": {}, "context": 1,
            "attachment_size_limit": 10_485_760,
            "data": {"id": "1", "name": "echo", "type": 1,
                     "options": [{"name": "arguments", "type": 3, "value": "hi"}]},
        }  # fmt: skip
        body, headers = signed(key, payload)
        reply = fake.expect(payload["token"])
        async with session.post(f"{url}/discord/interactions", data=body, headers=headers) as r:
            assert r.status == 200, r.status
        assert await asyncio.wait_for(reply, REPLY_WAIT) == "hi"

    return send


async def walk(channel: str) -> Walk:
    from slashgate.config import Settings
    from slashgate.server import running

    key = SigningKey.generate()
    async with AsyncExitStack() as stack:
        send: Send
        if channel == "discord":
            fake_discord = FakeDiscord()
            await fake_discord.start()
            stack.push_async_callback(fake_discord.stop)
            api, send = fake_discord.url, discord(fake_discord, key)
        else:
            fake = FakeTelegram() if channel == "telegram" else FakeSlack()
            await fake.start()
            stack.push_async_callback(fake.stop)
            if isinstance(fake, FakeSlack):
                api, send = fake.api, slack(fake)
            else:
                api, send = fake.url, telegram(fake)
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="slashgate-walk-")))
        opened = {k: v for k, v in OPEN_ACCESS.items() if k in Settings.model_fields}
        settings = Settings(
            **opened,
            **settings_of(channel, api, key.verify_key.encode().hex()),
            port=0,
            log_level="WARNING",
            store="memory",
            state_path=state / "state.sqlite3",
        )
        server = await stack.enter_async_context(running(settings))
        session = await stack.enter_async_context(aiohttp.ClientSession())
        for n in range(1, WARM_UP + 1):
            await send(session, server.url, n)
        await asyncio.sleep(SETTLE)  # the warm-up's last steps are not the traced input's
        traced = Walk()
        sys.setprofile(traced)
        try:
            await send(session, server.url, WARM_UP + 1)
            await asyncio.sleep(SETTLE)
        finally:
            sys.setprofile(None)
        return traced


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("channels", nargs="*", metavar="CHANNEL", help=", ".join(CHANNELS))
    parser.add_argument("--files", action="store_true", help="list each file's entries")
    args = parser.parse_args()
    if unknown := set(args.channels) - set(CHANNELS):
        parser.error(f"unknown channel: {', '.join(sorted(unknown))}")
    for channel in args.channels or CHANNELS:
        found = asyncio.run(walk(channel))
        print(f"{channel:9} {len(found.ran):3} files  {found.returns:3} returns")
        if args.files:
            for file in sorted(found.ran):
                name = os.path.relpath(file, ROOT)
                print(f"    {found.entries[file]:3}  {name}")


if __name__ == "__main__":
    main()
