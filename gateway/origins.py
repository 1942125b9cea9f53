"""Host names and origins as HTTP carries them (the ``Host`` and ``Origin`` headers) and as
the settings ``allowed_hosts`` and ``cors_origins`` name them. Parsed by hand, strictly: a
value that is not plainly a host (or an origin) is no match, never a guess.
"""

from __future__ import annotations

import ipaddress
import re

DEFAULT_PORTS = {"http": 80, "https": 443}
# A DNS name as a Host header carries it: letters, digits, hyphens, underscores, dots.
_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?")


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, int | None] | None:
    """A ``Host`` value (``Example.com:8080``, ``[::1]:80``, ``127.0.0.1``) as its lowercased
    name (an IPv6 address without brackets, a name without a trailing dot) and its port
    (None when it has none); None when it is not a host at all.
    """
    value = value.strip().lower()
    port_text = ""
    if value.startswith("["):  # an IPv6 literal, in brackets, maybe with a port
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:]
        if not is_ip(name) or ":" not in name:
            return None
    else:
        name, colon, port_text = value.rpartition(":")
        if not colon:
            name, port_text = value, ""
        name = name.removesuffix(".")
        if not _NAME.fullmatch(name):
            return None
    if not port_text:
        return name, None
    if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        return None
    return name, int(port_text)


def split_origin(value: str) -> tuple[str, str, int] | None:
    """An ``Origin`` (``https://example.com``, ``http://127.0.0.1:8080``) as (scheme, name,
    port: the scheme's default when it names none); None for ``null`` and anything else that
    is no http(s) origin.
    """
    scheme, sep, rest = value.strip().lower().partition("://")
    if not sep or scheme not in DEFAULT_PORTS:
        return None
    host = split_host(rest) if rest and "/" not in rest and "@" not in rest else None
    if host is None:
        return None
    name, port = host
    return scheme, name, DEFAULT_PORTS[scheme] if port is None else port


def origin_text(scheme: str, name: str, port: int) -> str:
    """The canonical spelling of an origin: the default port left out, IPv6 in brackets."""
    shown = f"[{name}]" if ":" in name else name
    return f"{scheme}://{shown}" if DEFAULT_PORTS[scheme] == port else f"{scheme}://{shown}:{port}"


def host_setting(value: str) -> str:
    """An ``allowed_hosts`` entry checked and lowercased: a name (``gateway.example.com``),
    ``*.example.com`` (every name under it), an IP address, or ``*`` (any Host: the check
    off). ValueError says what is wrong.
    """
    text = value.strip().lower()
    if text == "*" or is_ip(text):
        return text
    name = text[2:] if text.startswith("*.") else text
    host = split_host(name)
    if "://" in text or "/" in text or host is None or host[1] is not None:
        raise ValueError(
            f"{value!r} is not a host name: write it as the Host header names it, without "
            "scheme, port or path (gateway.example.com, *.example.com, 10.0.0.5)"
        )
    return "*." + host[0] if text.startswith("*.") else host[0]


def origin_setting(value: str) -> str:
    """A ``cors_origins`` entry checked and written canonically (``https://app.example.com``,
    ``http://localhost:3000``). ValueError says what is wrong: ``*`` and ``null`` included,
    since any page, or a sandboxed one, would then run the agent.
    """
    found = split_origin(value)
    if found is None:
        raise ValueError(
            f"{value!r} is not an origin: write scheme://host[:port] as a browser sends it in "
            "the Origin header (https://app.example.com), without a path; * and null are "
            "not allowed"
        )
    return origin_text(*found)
