"""slashgate's public API: your own commands on every channel.

::

    from slashgate import Bot, Context

    bot = Bot("mybot")

    @bot.command("deploy", description="Deploy a branch", hint="branch")
    async def deploy(ctx: Context) -> None:
        await ctx.reply(f"Deploying {ctx.args}")

    bot.run()  # or runtime = "mybot:bot" in slashgate.toml

See docs/extending.md. The package is also the app: the composition root (settings, channel
registry, server, command line) above the channels and the gateway.
"""

from gateway.runtimes.base import Runtime
from gateway.runtimes.embedded import CommandHandler, Context, HandlerError, Reference

from .bot import Bot

__all__ = ["Bot", "CommandHandler", "Context", "HandlerError", "Reference", "Runtime"]
