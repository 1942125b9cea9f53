"""The public ``slashgate`` API: typed command and text handlers on the embedded runtime,
per-conversation commands, and ``runtime = "module:name"`` loading a user's bot.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from contract import Command
from gateway.core import Gateway
from gateway.inbound import InboundMessage
from slashgate import Bot, Context, HandlerError, Reference, Runtime
from slashgate.registry import build_runtime
from tests.conftest import make_settings
from tests.recorder import Recorder


def deploy_bot(seen: list[Context]) -> Bot:
    bot = Bot("deployer", description="Deploys things")

    @bot.command("deploy", description="Deploy a branch", hint="environment")
    async def deploy(ctx: Context) -> None:
        seen.append(ctx)
        if not ctx.args:
            raise HandlerError("usage: /deploy <environment>")
        ctx.state["deploys"] = ctx.state.get("deploys", 0) + 1
        await ctx.reply(f"Deploying to {ctx.args.split()[0]}")
        await ctx.reply(f" (deploy #{ctx.state['deploys']} here)")

    @bot.command("alias", description="Add a command for this chat only", hint="name text")
    async def alias(ctx: Context) -> None:
        name, _, text = ctx.args.partition(" ")

        async def say(said: Context) -> None:
            await said.reply(text)

        ctx.add_command(name, say, description="an alias", hint="anything")
        await ctx.reply(f"/{name} added")

    @bot.command("unalias", hint="name")
    async def unalias(ctx: Context) -> None:
        await ctx.reply("removed" if ctx.remove_command(ctx.args) else "no such alias")

    @bot.command("crash")
    async def crash(ctx: Context) -> None:
        raise RuntimeError("the handler broke")

    return bot


@asynccontextmanager
async def started(bot: Runtime) -> AsyncIterator[Gateway]:
    gateway = Gateway(make_settings(), bot)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()


@pytest.fixture
async def gateway() -> AsyncIterator[tuple[Gateway, list[Context]]]:
    seen: list[Context] = []
    async with started(deploy_bot(seen)) as gateway:
        yield gateway, seen


async def send(gateway: Gateway, text: str, conversation: str = "c1") -> Recorder:
    sink = Recorder()
    await gateway.handle(InboundMessage("test", conversation, "ada", text), sink)
    return sink


async def test_a_command_handler_gets_the_parsed_input_and_streams_its_reply(
    gateway: tuple[Gateway, list[Context]],
) -> None:
    gw, seen = gateway
    sink = await send(gw, "/deploy  prod @branch:feature-x see @file:src/app.py @symbol:main ")
    assert sink.deltas == ["Deploying to prod", " (deploy #1 here)"]
    assert sink.text == "Deploying to prod (deploy #1 here)" and sink.reply.category is None  # type: ignore[union-attr]
    ctx = seen[0]
    assert (ctx.command, ctx.user, ctx.conversation) == ("deploy", "ada", "test:c1")
    assert ctx.args == "prod @branch:feature-x see @file:src/app.py @symbol:main"
    assert ctx.text == "/deploy  prod @branch:feature-x see @file:src/app.py @symbol:main "
    assert ctx.references == (
        Reference("branch", "feature-x", "@branch:feature-x"),
        Reference("file", "src/app.py", "@file:src/app.py"),
        Reference("symbol", "main", "@symbol:main"),
    )
    assert (await send(gw, "/deploy staging")).text == "Deploying to staging (deploy #2 here)"
    assert (await send(gw, "/deploy qa", "c2")).text.endswith("(deploy #1 here)"), (
        "state is per conversation"
    )


async def test_the_bots_commands_are_the_menu_with_their_descriptions_and_hints(
    gateway: tuple[Gateway, list[Context]],
) -> None:
    gw, _ = gateway
    menu = gw.menu()
    assert menu is not None
    runtime = [c for c in menu if c.source != "gateway"]
    assert [(c.name, c.description, c.hint) for c in runtime] == [
        ("deploy", "Deploy a branch", "environment"),
        ("alias", "Add a command for this chat only", "name text"),
        ("unalias", "", "name"),
        ("crash", "", None),
    ]


async def test_failures_are_the_contracts_texts(gateway: tuple[Gateway, list[Context]]) -> None:
    gw, _ = gateway
    usage = await send(gw, "/deploy")
    assert usage.reply is not None and usage.reply.category == "generic"
    assert usage.text == "Slash command /deploy failed: usage: /deploy <environment>"
    crash = await send(gw, "/crash")
    assert crash.text == "Slash command /crash failed: the handler broke"
    plain = await send(gw, "hello there")  # no text handler
    assert plain.reply is not None and plain.reply.category == "unsupported"
    assert plain.text == (
        "That request is not supported: this bot answers slash commands only: "
        "send /help to list them"
    )


async def test_a_text_handler_answers_plain_text() -> None:
    bot = Bot()

    @bot.text
    async def chat(ctx: Context) -> None:
        await ctx.reply(f"{ctx.user} said {ctx.text!r} ({ctx.command}, {ctx.args!r})")

    async with started(bot) as gw:
        assert (await send(gw, "hi @file:a.txt")).text == "ada said 'hi @file:a.txt' (None, '')"


async def test_commands_added_in_a_conversation_are_that_conversations_only(
    gateway: tuple[Gateway, list[Context]],
) -> None:
    gw, _ = gateway
    assert (await send(gw, "/alias hi Hello there!")).text == "/hi added"
    mine = {c.name: c for c in await gw.commands("test", "c1")}
    assert mine["hi"] == Command(
        name="hi", description="an alias", hint="anything", source="dynamic"
    )
    assert (await send(gw, "/hi")).text == "Hello there!"
    other = await send(gw, "/hi", "c2")
    assert other.reply is not None and other.reply.category == "unsupported"
    assert "hi" not in {c.name for c in await gw.commands("test", "c2")}
    assert (await send(gw, "/unalias hi")).text == "removed"
    assert (await send(gw, "/unalias hi")).text == "no such alias"
    gone = await send(gw, "/hi")
    assert gone.reply is not None and gone.reply.category == "unsupported"


async def test_commands_added_to_the_bot_reach_conversations_opened_later() -> None:
    bot = Bot()

    async def ping(ctx: Context) -> None:
        await ctx.reply("pong")

    async with started(bot) as gw:
        assert (await send(gw, "/ping")).reply.category == "unsupported"  # type: ignore[union-attr]
        bot.add_command("ping", ping, description="Answer pong")
        assert (await send(gw, "/ping", "c2")).text == "pong"
        assert bot.remove_command("ping") and not bot.remove_command("ping")
        assert (await send(gw, "/ping", "c3")).reply.category == "unsupported"  # type: ignore[union-attr]


def test_bad_command_names_and_duplicates_are_refused_when_registered() -> None:
    bot = Bot()

    async def handler(ctx: Context) -> None:
        await ctx.reply("x")

    for bad in ("Deploy", "deploy now", "-x", "x_y", ""):
        with pytest.raises(ValueError, match="lower-case letters and digits"):
            bot.add_command(bad, handler)
    bot.command("deploy")(handler)
    with pytest.raises(ValueError, match="/deploy is already registered"):
        bot.command("deploy")(handler)


BOT_MODULE = """
from slashgate import Bot, Context

bot = Bot("mine")


@bot.command("hello", description="Say hello")
async def hello(ctx: Context) -> None:
    await ctx.reply(f"hello {ctx.user}")


def make() -> Bot:
    return bot


not_a_runtime = 42
"""


@pytest.mark.parametrize("spec", ["my_bot_module:bot", "my_bot_module:make"])
async def test_runtime_setting_loads_a_bot_from_the_working_directory(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_bot_module.py").write_text(BOT_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # undone after the test, with the module
    runtime = build_runtime(make_settings(runtime=spec))
    assert isinstance(runtime, Bot)
    async with started(runtime) as gw:
        assert (await send(gw, "/hello")).text == "hello ada"
    with pytest.raises(ValueError, match="runtime: my_bot_module:not_a_runtime is a int"):
        build_runtime(make_settings(runtime="my_bot_module:not_a_runtime"))
    with pytest.raises(ValueError, match="runtime: my_bot_module has no nothing"):
        build_runtime(make_settings(runtime="my_bot_module:nothing"))
