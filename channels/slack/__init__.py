"""The Slack channel (slack-bolt, async): HTTP at /slack/events or Socket Mode.

The channel is ``.channel.SlackChannel``. The package itself imports nothing, so that the app
reads this channel's settings (``.settings``) without loading slack-bolt.
"""
