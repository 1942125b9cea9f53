"""hikari's first import takes about a second: paid at collection, not on a test's loop."""

import channels.discord.channel  # noqa: F401
