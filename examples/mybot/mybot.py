"""A bot of your own in the slashgate image: ``runtime = "mybot:create"`` (docs/deploy.md).

``create`` is a factory: the gateway calls it once at start, so settings it reads from the
environment are the container's.
"""

import os

from slashgate import Bot, Context, HandlerError


def create() -> Bot:
    bot = Bot("mybot", description="A bot of your own, in a container")
    greeting = os.environ.get("MYBOT_GREETING", "Hello")

    @bot.command("greet", description="Greet someone", hint="name")
    async def greet(ctx: Context) -> None:
        if not ctx.args:
            raise HandlerError("usage: /greet <name>")
        await ctx.reply(f"{greeting}, {ctx.args}! (from {ctx.conversation})")

    return bot
