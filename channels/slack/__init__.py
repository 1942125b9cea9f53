"""The Slack channel (slack-bolt, async): HTTP at /slack/events or Socket Mode."""

from .channel import SlackChannel

__all__ = ["SlackChannel"]
