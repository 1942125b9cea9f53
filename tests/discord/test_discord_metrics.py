"""Discord's REST calls in ``GET /metrics`` (``slashgate_platform_requests_total``): each
one the channel makes through hikari, for interactions and plain messages alike, labelled
by its path's words and method, never an id or a token.
"""

from __future__ import annotations

from contract import Command
from tests.metrics import scrape
from tests.slack.slack_harness import ScriptedRuntime, deltas

from .fake import APPLICATION
from .interactions import command
from .plain_harness import DM, message_create, plain_gateway

DEPLOY = (Command(name="deploy"),)


async def test_each_discord_call_is_counted_by_route_and_outcome(gateway_server):
    runtime = ScriptedRuntime(deltas("done"), DEPLOY)
    async with plain_gateway(gateway_server, runtime) as p:
        payload = command("deploy")
        await p.h.interact(payload)
        await p.h.replies(payload["token"])
        await p.say(message_create("/deploy"))
        metrics = await scrape(p.h.server.url)
        fake = p.h.fake
        edits = len(fake.writes("PATCH", "/messages/@original"))
        posts = len(fake.writes("POST", "/channels/"))
    assert edits and posts
    assert metrics.calls("discord", "webhooks.messages.original.patch", "ok") == edits
    assert metrics.calls("discord", "channels.messages.post", "ok") == posts
    labels = [dict(k) for (name, k) in metrics.samples if name.startswith("slashgate_platform")]
    methods = [m["method"] for m in labels if m.get("platform") == "discord"]
    assert "oauth2.applications.me.get" in methods  # the command sync's first call
    secrets = (payload["token"], str(APPLICATION), DM)  # the token, and ids in the paths
    assert not [m for m in methods if any(s in m for s in secrets)]
