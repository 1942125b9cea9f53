"""The demo entity served by default: small commands to try every part of the contract."""

from __future__ import annotations

import asyncio
import math

from contract import STRICT_NAME, Command, utf16_len, utf16_slice

from .entity import EntityDefinition, HandlerContext, HandlerError, InboxWake

MAX_SLOW_SECONDS = 3600

QUICKSTART = """**slashgate quickstart**
- `/echo <text>` replies with exactly your text.
- `/slow <seconds>` streams one line a second: meanwhile try `/status`, `/cancel`
  or another command.
- `/remember <name> <text>` adds the command `/<name>` that replies with your text;
  `/forget <name>` removes it.
- `/help` lists every command; plain text gets a quoted reply."""

STATIC_COMMANDS = (
    Command(name="echo", description="Reply with exactly the given text", hint="text"),
    Command(name="slow", description="Stream one line a second, then finish", hint="seconds"),
    Command(
        name="remember", description="Add a command that replies with a text", hint="name text"
    ),
    Command(name="forget", description="Remove a remembered command", hint="name"),
    Command(name="quickstart", description="A short guide to this gateway"),
)


def _leading_command(source: str, nodes: list[dict[str, object]]) -> tuple[str, str] | None:
    """(command name, argument text) when the input starts with a slash_command node."""
    for node in nodes:
        if node["kind"] == "slash_command":
            end = node["end"]
            assert isinstance(end, int)  # validated on arrival
            args = utf16_slice(source, end, utf16_len(source)).strip()
            return str(node["name"]), args
        if node["kind"] != "text" or str(node["raw"]).strip():
            return None
    return None


async def demo_handler(ctx: HandlerContext) -> None:
    wake = ctx.wake
    if not isinstance(wake, InboxWake) or wake.message.message_type != "composer_input":
        return
    payload = wake.message.payload
    source: str = payload["source"]
    leading = _leading_command(source, payload.get("nodes") or [])
    if leading is None:
        await ctx.reply(f'You said: "{source.strip()}"')
        return
    name, args = leading
    remembered: dict[str, str] = ctx.state.setdefault("remembered", {})
    if name == "echo":
        if not args:
            raise HandlerError("usage: /echo <text>")
        await ctx.reply(args)
    elif name == "slow":
        await _slow(ctx, args)
    elif name == "remember":
        new_name, _, text = args.partition(" ")
        new_name, text = new_name.lower(), text.strip()
        if not STRICT_NAME.fullmatch(new_name) or not text:
            raise HandlerError(
                "usage: /remember <name> <text>, name in lower-case letters, digits and -"
            )
        remembered[new_name] = text
        ctx.slash_commands.register(
            Command(name=new_name, description=f"Remembered: {text[:60]}", source="dynamic")
        )
        await ctx.reply(f"Remembered /{new_name}.")
    elif name == "forget":
        target = args.lower()
        if target not in remembered:
            raise HandlerError(f"no remembered command /{target}")
        del remembered[target]
        ctx.slash_commands.unregister(target)
        await ctx.reply(f"Forgot /{target}.")
    elif name == "quickstart":
        await ctx.reply(QUICKSTART)
    elif name in remembered:
        await ctx.reply(remembered[name])
    else:
        raise HandlerError(f"unknown command /{name}", "unsupported")


async def _slow(ctx: HandlerContext, args: str) -> None:
    try:
        seconds = float(args or "3")
    except ValueError:
        raise HandlerError("usage: /slow <seconds>") from None
    if not 0 <= seconds <= MAX_SLOW_SECONDS or math.isnan(seconds):
        raise HandlerError(f"seconds must be between 0 and {MAX_SLOW_SECONDS}")
    ticks = math.ceil(seconds)
    for tick in range(1, ticks + 1):
        await asyncio.sleep(1)
        await ctx.reply(f"{tick}/{ticks}\n")
    await ctx.reply("done")


DEMO_ENTITY = EntityDefinition(
    type="demo",
    handler=demo_handler,
    slash_commands=STATIC_COMMANDS,
    description="The demo entity: echo, slow, remember, forget, quickstart",
)
