"""The Matrix channel: a bot account that syncs with its homeserver (mautrix-python)."""
