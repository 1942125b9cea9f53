from slashgate import Bot, Context, HandlerError

bot = Bot("deployer", description="Deploys branches")


@bot.command("deploy", description="Deploy to an environment", hint="environment")
async def deploy(ctx: Context) -> None:
    if not ctx.args:
        raise HandlerError("usage: /deploy <environment>")
    await ctx.reply(f"Deploying to {ctx.args.split()[0]} for {ctx.user}")
    for ref in ctx.references:  # @branch:x, @file:y, @symbol:z in the input
        await ctx.reply(f"\n- with {ref.kind} {ref.value}")


@bot.text
async def chat(ctx: Context) -> None:
    await ctx.reply(f"Try /deploy <environment>. You said: {ctx.text}")


if __name__ == "__main__":
    bot.run()  # `slashgate serve` with this bot: --port, --config work as usual
