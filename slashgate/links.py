"""The addresses the start-up prints for a person to open: the web chat, the API."""

from __future__ import annotations

from collections.abc import Iterable

from gateway.api import Channel

# Listening on every interface: no browser can open these as they are.
EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::", "[::]"})


def browser_base(host: str, published_host: str | None, port: int) -> str:
    """The server's base URL as a browser on this machine opens it: on every interface, the
    address the port is published on (a container's host) or else this machine's loopback.
    """
    if host in EVERY_INTERFACE:
        published = published_host not in EVERY_INTERFACE and published_host
        host = published or "127.0.0.1"
    if ":" in host and not host.startswith("["):  # IPv6 goes in brackets in a URL
        host = f"[{host}]"
    return f"http://{host}:{port}"


def link_lines(base: str, channels: Iterable[Channel]) -> list[str]:
    """``web chat: http://127.0.0.1:8080/chat``, one line per address the channels serve."""
    return [f"{name}: {url}" for channel in channels for name, url in channel.links(base)]
