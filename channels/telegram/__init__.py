"""The Telegram channel (aiogram 3): on when ``SLASHGATE_TELEGRAM_TOKEN`` is set.

The channel is ``.channel.TelegramChannel``. The package itself imports nothing, so that the
app reads this channel's settings (``.settings``) without loading aiogram.
"""
