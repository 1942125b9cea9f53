"""The routes a composer uses beside ``POST /v1/messages``: the commands, the agent's name,
completion at the cursor, a classification without a run, and the answer to a permission
request.
"""

from __future__ import annotations

from aiohttp import web

from contract import Command, complete
from gateway.api import InboundMessage

from .checks import Route, parse, validate
from .errors import ApiError
from .permissions import PermissionAnswer, answer
from .wire import (
    ClassifyIn,
    CommandsQuery,
    CompleteQuery,
    agent_body,
    commands_body,
    completion_body,
    preview_body,
)


class Assist(Route):
    async def get_commands(self, request: web.Request) -> web.Response:
        """The inventory; with ``user``, what ``/help`` would list to that sender."""
        self.authorize(request.headers)
        query = validate(CommandsQuery, _given(request))
        commands = await self._offered(query)
        return web.json_response(commands_body(commands, self.settings.interactive_only))

    async def get_agent(self, request: web.Request) -> web.Response:
        """Who answers: the runtime's agent, by name."""
        self.authorize(request.headers)
        return web.json_response(agent_body(self.gateway.agent))

    async def get_complete(self, request: web.Request) -> web.Response:
        """What fits at the cursor: the conversation's commands, or reference prefixes."""
        self.authorize(request.headers)
        query = validate(CompleteQuery, _given(request))
        conversation = query.conversation
        commands = await self._offered(query)
        try:
            completion = complete(
                query.text, query.cursor, commands, self.settings.interactive_only, query.limit
            )
        except ValueError as exc:
            raise ApiError(400, "invalid_request", str(exc)) from None
        return web.json_response(completion_body(conversation, completion))

    async def _offered(self, query: CommandsQuery) -> tuple[Command, ...]:
        """The conversation's commands (without one, the menu); with ``user``, those they
        may run (owner-only commands, where the webhook has owners).
        """
        conversation = query.conversation
        if query.user is None:
            return await self.gateway.commands(self.name if conversation else None, conversation)
        return await self.gateway.offered(
            InboundMessage(self.name, conversation or "", query.user, "")
        )

    async def post_classify(self, request: web.Request) -> web.Response:
        """The classification and payload ``POST /v1/messages`` would give; nothing runs."""
        self.authorize(request.headers)
        data = parse(await self.read(request), ClassifyIn)
        inbound = InboundMessage(self.name, data.conversation, "", data.text)
        outcome = await self.gateway.preview(inbound)
        return web.json_response(preview_body(data.conversation, outcome))

    async def post_permission(self, request: web.Request) -> web.Response:
        self.authorize(request.headers)
        body = parse(await self.read(request), PermissionAnswer)
        status, data = await answer(self.gateway, self.name, request.match_info["request_id"], body)
        return web.json_response(data, status=status)


def _given(request: web.Request) -> dict[str, str]:
    """The query's parameters; an empty one (``cursor=``) is the same as none."""
    return {k: v for k, v in request.query.items() if v != ""}
