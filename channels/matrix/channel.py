"""The Matrix channel on mautrix-python: a bot account syncing with its homeserver, the
gateway core, replies out.

The channel holds no contract logic. Sync (``sync``) brings invitations (``invites``: the
access policy accepts or refuses them) and room messages; the ``intake`` journals each
message for the bot (``messages``: a direct room, a mention) and answers it in the
background with a sink (``sink``) that renders for Matrix. The inventory is published to the
rooms as the in-room bot commands proposals' state events (``commands``), again when a
room's members or its person's ownership change (``roles``). Encrypted rooms are read and
written through the bot device's keys (``crypto``).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

import aiohttp
from mautrix.api import HTTPAPI
from mautrix.client import Client
from mautrix.types import LoginType, UserID

from channels.metering import counted
from contract import Command
from gateway.api import (
    Channel,
    Entry,
    GatewayAPI,
    InboundMessage,
    ReplySink,
    StoreUnavailable,
)
from gateway.pacing import Pacer, Rate, budget

from .addressing import Addressing
from .commands import Publisher
from .crypto import DEFAULT_PICKLE_KEY, Crypto, crypto_file
from .files import MatrixFiles
from .intake import Intake
from .invites import Invites
from .messages import Messages
from .outbox import Outbox
from .permissions import Permissions
from .roles import Roles, Standing
from .rooms import Rooms
from .settings import MatrixSettings
from .sync import Sync

log = logging.getLogger("slashgate.matrix")

MAX_IN_FLIGHT = 256  # messages answered at once; past it sync waits
DEFAULT_DEVICE = "SLASHGATE"


def _method(request: aiohttp.ClientRequest) -> str:
    """A call's name for the metrics: the API path without ids (``/sync``, ``send``)."""
    parts = [p for p in request.url.path.split("/") if p and not p.startswith(("!", "@", "$"))]
    return parts[3] if len(parts) > 3 else "/".join(parts)


class MatrixChannel(Channel[MatrixSettings]):
    name = "matrix"

    def __init__(self, gateway: GatewayAPI, settings: MatrixSettings) -> None:
        super().__init__(gateway, settings)
        if settings.matrix_homeserver is None:
            raise ValueError("the Matrix channel needs SLASHGATE_MATRIX_HOMESERVER")
        self.homeserver = settings.matrix_homeserver.rstrip("/")
        self.session: aiohttp.ClientSession | None = None
        self.client: Client | None = None
        self.crypto: Crypto | None = None
        self.sync: Sync | None = None
        self.intake: Intake | None = None
        self.publisher: Publisher | None = None
        self.rooms: Rooms | None = None
        self.messages: Messages | None = None
        self._inventories: dict[str, tuple[Command, ...]] = {}  # a room's own commands
        self.roles = Roles(self._standing)
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False
        rate = Rate(settings.matrix_rate_global)
        self.pacer = Pacer(budget(gateway.store, f"{settings.redis_prefix}pacing:matrix", rate))

    def describe(self) -> str:
        who = self.client.mxid if self.client is not None else "bot"
        return f"matrix ({who} on {self.homeserver})"

    # -- lifecycle ------------------------------------------------------------------------

    async def _connect(self) -> Client:
        """The client, signed in: the access token's account, or a password login."""
        timeout = aiohttp.ClientTimeout(
            total=None,
            sock_connect=self.settings.platform_timeout,
            sock_read=self.settings.matrix_sync_timeout + self.settings.platform_timeout,
        )
        self.session = aiohttp.ClientSession(
            timeout=timeout, middlewares=(counted(self.gateway.metrics, "matrix", _method),)
        )
        settings = self.settings
        token = settings.matrix_access_token
        api = HTTPAPI(
            self.homeserver, token.get_secret_value() if token else "", client_session=self.session
        )
        client = Client(UserID(settings.matrix_user_id or ""), api=api)
        if token is None:
            await self._login(client)
        me = await client.whoami()
        client.mxid = me.user_id
        client.device_id = me.device_id or client.device_id
        return client

    async def _login(self, client: Client) -> None:
        """A password login as the configured device (the same device, so its keys hold)."""
        password = self.settings.matrix_password
        assert password is not None  # MatrixSettings checks it
        await client.login(
            identifier=UserID(client.mxid),
            login_type=LoginType.PASSWORD,
            password=password.get_secret_value(),
            device_id=client.device_id or self.settings.matrix_device_id or DEFAULT_DEVICE,
            store_access_token=True,
        )

    async def _sign_in_again(self, client: Client, crypto: Crypto) -> None:
        """After "log out of all devices": the same device again, its keys uploaded again
        (the homeserver deleted them with the old login; without them no one can encrypt for
        the bot).
        """
        await self._login(client)
        await crypto.share_keys_again()

    async def check(self) -> str:
        try:
            client = await self._connect()
            return f"{client.mxid} (device {client.device_id}) on {self.homeserver}"
        finally:
            if self.session is not None:
                await self.session.close()

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self._close()
            raise

    async def _start(self) -> None:
        await self.pacer.budget.prepare()
        client = self.client = await self._connect()
        assert self.session is not None
        settings = self.settings
        me = str(client.mxid)
        pickle_key = settings.matrix_pickle_key
        crypto = self.crypto = await Crypto.open(
            client,
            crypto_file(settings.matrix_crypto_path, settings.data_dir),
            pickle_key.get_secret_value() if pickle_key else DEFAULT_PICKLE_KEY,
            settings.matrix_trust,
        )
        outbox = Outbox(
            client,
            self.pacer,
            Rate(settings.matrix_rate_room),
            settings.matrix_edit_interval,
            settings.show_reasoning != "off",
            crypto,
        )
        permissions = Permissions(outbox, self.gateway, self.name)
        rooms = self.rooms = Rooms(client, me)
        files = MatrixFiles(self.session, self.homeserver, lambda: client.api.token, settings)
        self.messages = Messages(
            self.gateway, self.name, outbox, permissions, Addressing(me), rooms, files
        )
        self.intake = Intake(self.gateway, self.name, self.messages, crypto, MAX_IN_FLIGHT)
        self.publisher = Publisher(client, me, self._inventory_of, outbox.state)
        self.sync = Sync(
            client,
            self.gateway.store,
            f"{settings.redis_prefix}matrix:sync:{me}",
            self.intake,
            rooms,
            Invites(client, self.gateway, self.name, settings, rooms),
            self.publisher.changed,
            settings.matrix_sync_timeout,
        )
        self.sync.crypto = crypto.step
        if settings.matrix_access_token is None:
            self.sync.sign_in = partial(self._sign_in_again, client, crypto)
        self.gateway.subscribe(self.inventory_changed)
        self.gateway.subscribe_conversation(self.conversation_changed)
        self.sync.start()
        self._watch = asyncio.create_task(
            self.roles.watch(self.sync.known, self.publisher.changed), name="matrix owners"
        )

    async def readiness(self) -> str | None:
        if self._stopping:
            return "stopping"
        if self.sync is None:
            return "not signed in to the homeserver yet"
        return self.sync.failing

    async def stop(self) -> None:
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        if self.sync is not None:
            await self.sync.stop()
        if self.publisher is not None:
            await self.publisher.aclose()
        if self.intake is not None:
            # The core has cancelled the turns already: what is left is their replies going
            # out. Past the grace they are cancelled (they stay in the journal).
            await self.intake.close(self.settings.cancel_grace)
        await self._close()

    async def _close(self) -> None:
        if self.crypto is not None:
            await self.crypto.close()
        if self.session is not None:
            await self.session.close()
        await self.pacer.aclose()

    async def recovered(self, entry: Entry) -> tuple[InboundMessage, ReplySink] | None:
        if self.messages is None:
            return None
        return await self.messages.recovered(entry)

    # -- the inventory in the rooms -------------------------------------------------------

    async def _inventory_of(self, room: str) -> tuple[Command, ...] | None:
        """What ``room`` offers: its commands less those its people may not run (owner-only
        ones, but in a direct room with an owner), as Telegram's menus leave them out; None
        for a room the bot left meanwhile.
        """
        commands = self._inventories.get(room) or self.gateway.menu()
        if commands is None or self.rooms is None or self.sync is None:
            return commands
        if room not in self.sync.known:
            return None
        direct = await self.rooms.direct(room)
        if direct:
            (person,) = await self.rooms.members(room) - {self.rooms.me}
            standing = await self.roles.of(room, person)
            if standing.owns:
                return commands
            if not standing.talks:  # a stranger: told how to pair, not what the agent does
                return ()
        else:
            self.roles.shared(room)
        policy = self.gateway.access.policy(self.name)
        return tuple(c for c in commands if not policy.owner_only(c.name, not direct))

    async def _standing(self, room: str, person: str) -> Standing:
        """What ``person`` may do in their direct room ``room`` (``Roles``)."""
        access = self.gateway.access
        if await access.is_owner(self.name, person):
            return Standing(talks=True, owns=True)
        said = InboundMessage(
            channel=self.name, conversation=room, user=person, text="", direct=True, groups=(room,)
        )
        try:
            talks = await access.lets_talk(said)
        except StoreUnavailable:  # deny by default: offered again once the book is read
            talks = False
        return Standing(talks=talks, owns=False)

    def inventory_changed(self, inventory: tuple[Command, ...]) -> None:
        """The gateway's inventory listener: every room the bot is in, but those with
        commands of their own.
        """
        if self._stopping or self.sync is None or self.publisher is None:
            return
        self.publisher.changed(r for r in self.sync.known if r not in self._inventories)

    def conversation_changed(self, key: str, inventory: tuple[Command, ...]) -> None:
        """A room's own commands (a conversation's inventory) go to that room only."""
        channel, _, conversation = key.partition(":")
        if channel != self.name or self._stopping or self.publisher is None:
            return
        room = conversation.partition("|")[0]  # a thread's commands are its room's
        self._inventories[room] = inventory
        self.publisher.changed([room])
