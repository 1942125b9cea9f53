"""The Discord channel (hikari): interactions over HTTP at ``POST /discord/interactions``.

The channel is ``.channel.DiscordChannel``. The package itself imports nothing, so that the
app reads this channel's settings (``.settings``) without loading hikari.
"""
