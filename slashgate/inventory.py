"""The inventory a channel publishes, found without serving (``slashgate slack manifest``,
``slashgate discord sync``): the runtime's static commands, or the first session's when the
runtime reports its commands only once a session is open.
"""

from __future__ import annotations

from contract import Command
from gateway.core import Gateway
from gateway.runtimes import Runtime
from gateway.settings import CoreSettings


async def effective_inventory(
    settings: CoreSettings, runtime: Runtime, channel: str, conversation: str
) -> tuple[Command, ...]:
    """The gateway's commands and the runtime's, as ``channel``'s menu would list them
    (``conversation``: the one a session is opened for, where one is needed).
    """
    gateway = Gateway(settings, runtime)
    await gateway.start()
    try:
        menu = gateway.menu()  # None: the runtime lists its commands once a session is open
        return menu if menu is not None else await gateway.commands(channel, conversation)
    finally:
        await gateway.stop()
