"""Which IP addresses the gateway may connect to for a file a user names (the webhook's
``attachments[].url``, docs/attachments.md): public ones only. The ranges refused are the
list below, in one place; IPv6 forms that carry an IPv4 address (IPv4-mapped, -compatible
and -translated, NAT64, 6to4, Teredo) are judged by that IPv4 address, as a connection to
them may reach it.

From the IANA special-purpose address registries (RFC 6890 and its updates): every block
that is not globally reachable, and those that reach something other than the Internet.
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

BLOCKED: tuple[IPv4Network | IPv6Network, ...] = tuple(
    ipaddress.ip_network(block)
    for block in (
        # IPv4
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata services: 169.254.169.254)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation (TEST-NET-1)
        "192.31.196.0/24",  # AS112-v4
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # deprecated 6to4 relay anycast
        "192.168.0.0/16",  # private
        "192.175.48.0/24",  # direct delegation AS112 service
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation (TEST-NET-2)
        "203.0.113.0/24",  # documentation (TEST-NET-3)
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the limited broadcast 255.255.255.255
        # IPv6 (the forms that carry an IPv4 address are in EMBEDDING, judged by it): only
        # global unicast, 2000::/3, is the Internet
        "::/3",  # reserved by the IETF (loopback, unspecified, discard-only 100::/64...)
        "4000::/2",  # not allocated
        "8000::/1",  # not allocated; unique local, link-local, multicast are in it
        "64:ff9b:1::/48",  # local-use IPv4/IPv6 translation
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments (Teredo, 2001::/32, is judged by its IPv4)
        "2001:db8::/32",  # documentation
        "2620:4f:8000::/48",  # direct delegation AS112 service
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing (SRv6) SIDs
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)

# IPv6 blocks whose addresses carry an IPv4 address: the last 32 bits, except 6to4 and Teredo.
IPV4_MAPPED = IPv6Network("::ffff:0:0/96")  # ::ffff:a.b.c.d
IPV4_COMPATIBLE = IPv6Network("::/96")  # ::a.b.c.d (deprecated; :: and ::1 are in it)
IPV4_TRANSLATED = IPv6Network("::ffff:0:0:0/96")  # SIIT, ::ffff:0:a.b.c.d
NAT64 = IPv6Network("64:ff9b::/96")  # the well-known NAT64 prefix
SIX_TO_FOUR = IPv6Network("2002::/16")  # 2002:AABB:CCDD::/48 for a.b.c.d
TEREDO = IPv6Network("2001::/32")  # the server's IPv4 and the client's (obfuscated)
EMBEDDING = (IPV4_MAPPED, IPV4_COMPATIBLE, IPV4_TRANSLATED, NAT64, SIX_TO_FOUR, TEREDO)


def embedded_ipv4(address: IPv6Address) -> tuple[IPv4Address, ...]:
    """The IPv4 addresses an IPv6 address carries (none for most)."""
    if address in TEREDO:
        server, client = address.teredo or (None, None)
        return tuple(a for a in (server, client) if a is not None)
    if address in SIX_TO_FOUR:
        return (address.sixtofour,) if address.sixtofour else ()
    if any(address in block for block in (IPV4_MAPPED, IPV4_COMPATIBLE, IPV4_TRANSLATED, NAT64)):
        return (IPv4Address(int(address) & 0xFFFFFFFF),)
    return ()


def public(address: str | IPv4Address | IPv6Address) -> bool:
    """True when ``address`` (an IP address, in text or not) is one the gateway may connect
    to: in no blocked range, and for an IPv6 address carrying IPv4 addresses, each of them
    public too. A text that is no IP address is not public.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    except ValueError:
        return False
    if isinstance(ip, IPv6Address):
        carried = embedded_ipv4(ip)
        if carried:
            return all(public(v4) for v4 in carried)
    return not any(ip in block for block in BLOCKED)
