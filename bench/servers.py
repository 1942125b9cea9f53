"""The servers under load, each in a process of its own; the bench reads their CPU time.

``python bench/servers.py KIND [PLATFORM_URL]`` prints ``listening on URL`` once it serves.
Kinds, each subject beside its anchor:

- ``bare``: a plain aiohttp handler that parses JSON and answers JSON (anchor of ``webhook``);
- ``webhook``: slashgate on the embedded runtime, ``POST /v1/messages``;
- ``contract``: ``bare`` doing the contract's own work of ``webhook``, and no more: the body
  read by the webhook's model, classified, its composer_input built and checked, the same
  answer encoded the same way; no core, no runtime turn (the floor under ``webhook``);
- ``aiogram``: an aiogram 3 echo bot, ``Command("echo")`` + ``message.answer``, on aiogram's
  own webhook handler (anchor of ``telegram``);
- ``telegram``: slashgate's Telegram channel in webhook mode;
- ``bolt``: a slack-bolt app as its documentation writes it: ``await ack()``, then
  ``await say(text)`` (anchor of ``slack``);
- ``slack``: slashgate's Slack channel.

Environment: ``BENCH_STORE`` (``memory``, the default, or ``sqlite``) is slashgate's state
store. The platform URL is the fake Bot API or Slack Web API the bench runs in its own process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.loadrig import OPEN_ACCESS  # noqa: E402
from bench.platforms import listen  # noqa: E402

TELEGRAM_TOKEN = "123456:bench-token_for-the-fake-bot-api"
TELEGRAM_SECRET = "bench-secret-0123456789"
SLACK_TOKEN = "xoxb-bench"
SLACK_SECRET = "bench-signing-secret"
UNPACED = 1e9  # messages per second (or minute) that no run comes near: the pacer never waits


async def bare_handler(request: web.Request) -> web.Response:
    data = await request.json()
    return web.json_response(
        {"conversation": data["conversation"], "reply": {"text": data["text"]}}
    )


async def serve_app(app: web.Application) -> None:
    """Serve ``app`` until SIGTERM, after saying where (the bench reads that line)."""
    runner, url = await listen(app)
    print(f"listening on {url}", flush=True)
    await until_terminated()
    await runner.cleanup()


def bare() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/messages", bare_handler)
    return app


def contract_only() -> web.Application:
    from bench.micro import contract
    from channels.webhook.wire import MessageIn, classification_body
    from contract import strict_payload
    from contract.models import built_message
    from gateway import jsonslices
    from gateway.composer import message_json

    slash = contract()  # the demo's commands and the gateway's, as ``webhook`` has them
    dumps = jsonslices.encoder()

    async def answer(request: web.Request) -> web.Response:
        message = MessageIn.model_validate_json(await request.read())
        result = slash.classify(message.text)
        forwarded = built_message(strict_payload(result.payload))
        reply = {"text": result.args, "category": None, "stop_reason": "end_turn"}  # /echo's
        body = {
            "conversation": message.conversation,
            "classification": classification_body(result),
            "forwarded": message_json(forwarded),
            "reply": reply,
        }
        return web.json_response(body, dumps=dumps)

    app = web.Application()
    app.router.add_post("/v1/messages", answer)
    return app


def aiogram_bot(api: str) -> web.Application:
    from aiogram import Bot, Dispatcher, Router
    from aiogram.client.session.aiohttp import AiohttpSession
    from aiogram.client.telegram import TelegramAPIServer
    from aiogram.filters import Command, CommandObject
    from aiogram.types import Message
    from aiogram.webhook.aiohttp_server import SimpleRequestHandler, setup_application

    router = Router()

    @router.message(Command("echo"))
    async def echo(message: Message, command: CommandObject) -> None:
        await message.answer(command.args or "")

    dispatcher = Dispatcher()
    dispatcher.include_router(router)
    bot = Bot(TELEGRAM_TOKEN, session=AiohttpSession(api=TelegramAPIServer.from_base(api)))
    app = web.Application()
    handler = SimpleRequestHandler(dispatcher, bot, secret_token=TELEGRAM_SECRET)
    handler.register(app, path="/telegram/webhook")
    setup_application(app, dispatcher, bot=bot)
    return app


def bolt_app(api: str) -> web.Application:
    from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    app = AsyncApp(
        signing_secret=SLACK_SECRET,
        client=AsyncWebClient(token=SLACK_TOKEN, base_url=api),
    )

    @app.command("/agent")
    async def agent(ack: Any, say: Any, command: dict[str, Any]) -> None:
        await ack()
        await say(command["text"])

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    server = web.Application()
    server.router.add_post("/slack/events", events)
    return server


async def slashgate(kind: str, api: str) -> None:
    from pydantic import SecretStr

    # The store is the bench's choice (``--store``), never a file left in the work tree.
    store = os.environ.get("BENCH_STORE", "memory")
    settings: dict[str, Any] = {"port": 0, "log_level": "WARNING", "store": store}
    if kind == "telegram":
        settings |= {
            "telegram_token": SecretStr(TELEGRAM_TOKEN),
            "telegram_secret": SecretStr(TELEGRAM_SECRET),
            "telegram_api_base": api,
            # The pacer runs, but never waits: the load is far above Telegram's limits, and
            # the aiogram bot it is measured against sends as fast as it can.
            "telegram_rate_global": UNPACED,
            "telegram_rate_private": UNPACED,
            "telegram_rate_group": UNPACED,
        }
    elif kind == "slack":
        settings |= {
            "slack_bot_token": SecretStr(SLACK_TOKEN),
            "slack_signing_secret": SecretStr(SLACK_SECRET),
            "slack_api_base": api,
            "slack_rate_channel": UNPACED,  # as for Telegram: slack-bolt's say() is unpaced
            "slack_rate_update": UNPACED,
        }
    await serve_slashgate(settings)


async def serve_slashgate(settings: dict[str, Any]) -> None:
    """``slashgate serve`` with ``settings`` until SIGTERM, its state file (on SQLite) in a
    fresh folder, never one left in the work tree.
    """
    from slashgate.config import Settings
    from slashgate.server import running

    opened = {k: v for k, v in OPEN_ACCESS.items() if k in Settings.model_fields}
    with tempfile.TemporaryDirectory(prefix="slashgate-bench-") as state:
        settings = {**opened, **settings, "state_path": Path(state) / "state.sqlite3"}
        async with running(Settings(**settings)) as server:
            print(f"listening on {server.url}", flush=True)
            await until_terminated()


async def until_terminated() -> None:
    """Serve until SIGTERM (the bench's stop), then leave cleanly."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()


async def main(kind: str, api: str) -> None:
    logging.basicConfig(level=logging.WARNING)
    if kind == "bare":
        await serve_app(bare())
    elif kind == "contract":
        await serve_app(contract_only())
    elif kind == "aiogram":
        await serve_app(aiogram_bot(api))
    elif kind == "bolt":
        await serve_app(bolt_app(api))
    else:
        await slashgate(kind, api)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""))
