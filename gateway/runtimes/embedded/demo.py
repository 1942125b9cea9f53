"""The demo bot served by default: small commands to try every part of the contract.

Written with the public ``Bot`` API (``slashgate``), as a user's own bot would be.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ...attachments import size_text
from ...settings import CoreSettings
from .bot import Bot, Context
from .entity import HandlerError

MAX_SLOW_SECONDS = 3600
# Remembered commands per conversation: each is kept in the state store and listed in every
# menu, so one user typing /remember in a loop must not grow either without end.
MAX_REMEMBERED = 50

QUICKSTART = f"""**slashgate quickstart**
- `/echo <text>` replies with exactly your text.
- `/slow <seconds>` streams one line a second: meanwhile try `/status`, `/cancel`
  or another command.
- `/remember <name> <text>` adds the command `/<name>` that replies with your text
  (at most {MAX_REMEMBERED} in a conversation); `/forget <name>` removes it.
- `/help` lists every command; plain text gets a quoted reply, files their name, type
  and size."""


def _received(part: dict[str, Any]) -> str:
    """A file part as the demo acknowledges it: name, type and size (never its bytes)."""
    size = f", {size_text(part['size'])}" if isinstance(part.get("size"), int) else ""
    return f"You sent {part['name']} ({part['mime']}{size})."


async def say_remembered(ctx: Context) -> None:
    """A remembered command: module-level, so that it is found again after a restart."""
    await ctx.reply(ctx.state["remembered"][ctx.command])


def demo_bot() -> Bot:
    bot = Bot("demo", description="The demo entity: echo, slow, remember, forget, quickstart")

    @bot.command("echo", description="Reply with exactly the given text", hint="<text>")
    async def echo(ctx: Context) -> None:
        if not ctx.args:
            raise HandlerError("usage: /echo <text>")
        await ctx.reply(ctx.args)

    @bot.command("slow", description="Stream one line a second, then finish", hint="<seconds>")
    async def slow(ctx: Context) -> None:
        try:
            seconds = float(ctx.args or "3")
        except ValueError:
            raise HandlerError("usage: /slow <seconds>") from None
        if not 0 <= seconds <= MAX_SLOW_SECONDS or math.isnan(seconds):
            raise HandlerError(f"seconds must be between 0 and {MAX_SLOW_SECONDS}")
        ticks = math.ceil(seconds)
        for tick in range(1, ticks + 1):
            await asyncio.sleep(1)
            await ctx.reply(f"{tick}/{ticks}\n")
        await ctx.reply("done")

    @bot.command(
        "remember", description="Add a command that replies with a text", hint="<name> <text>"
    )
    async def remember(ctx: Context) -> None:
        name, _, text = ctx.args.partition(" ")
        name, text = name.lower(), text.strip()
        remembered: dict[str, str] = ctx.state.setdefault("remembered", {})
        if name not in remembered and len(remembered) >= MAX_REMEMBERED:
            raise HandlerError(f"at most {MAX_REMEMBERED} remembered commands: /forget one first")
        try:
            if not text:
                raise ValueError("no text")
            ctx.add_command(name, say_remembered, description=f"Remembered: {text[:60]}")
        except ValueError:
            raise HandlerError(
                "usage: /remember <name> <text>, name in lower-case letters, digits and -"
            ) from None
        remembered[name] = text
        await ctx.reply(f"Remembered /{name}.")

    @bot.command("forget", description="Remove a remembered command", hint="<name>")
    async def forget(ctx: Context) -> None:
        name = ctx.args.lower()
        remembered: dict[str, str] = ctx.state.get("remembered", {})
        if remembered.pop(name, None) is None:
            raise HandlerError(f"no remembered command /{name}")
        ctx.remove_command(name)
        await ctx.reply(f"Forgot /{name}.")

    @bot.command("quickstart", description="A short guide to this gateway")
    async def quickstart(ctx: Context) -> None:
        await ctx.reply(QUICKSTART)

    @bot.text
    async def quote(ctx: Context) -> None:
        said = [f'You said: "{ctx.text.strip()}"'] if ctx.text.strip() or not ctx.files else []
        await ctx.reply("\n".join(said + [_received(part) for part in ctx.files]))

    return bot


def demo_runtime(settings: CoreSettings) -> Bot:
    """``runtime = "embedded"``, the default: the demo, which has no settings of its own."""
    return demo_bot()
