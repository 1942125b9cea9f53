"""Which addresses an attachment URL may reach (gateway/addresses.py): public ones only, IPv6
forms that carry an IPv4 address judged by it, the ranges in one list.
"""

from __future__ import annotations

import ipaddress
import re

import pytest

from gateway.addresses import BLOCKED, embedded_ipv4, public
from tests.conftest import ROOT

REFUSED = [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
    "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.1",
    "::1", "::", "fe80::1", "fd00::1", "ff02::1", "2001:db8::1", "100::1", "64:ff9b:1::1",
    # IPv6 forms that carry a private or loopback IPv4 address
    "::127.0.0.1",  # IPv4-compatible: ipaddress calls it global
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:0:10.0.0.1",  # IPv4-translated (SIIT)
    "64:ff9b::127.0.0.1",  # NAT64, well-known prefix: ipaddress calls it global
    "64:ff9b::169.254.169.254",
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1: ipaddress calls it global
    "2002:c0a8:101::",  # 6to4 of 192.168.1.1
    "2001:0:808:808::80ff:fffe",  # Teredo: client 127.0.0.1 (its bits inverted)
    "2001:0:a00:1::",  # Teredo: server 10.0.0.1
]  # fmt: skip
ALLOWED = [
    "8.8.8.8", "1.1.1.1", "2606:4700::1111", "2a00:1450:4001:81c::200e",
    "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
    "2001:0:808:808::f7f7:f7f7",  # Teredo: server and client 8.8.8.8
]  # fmt: skip


@pytest.mark.parametrize("address", REFUSED)
def test_private_addresses_and_those_that_carry_one_are_refused(address: str) -> None:
    assert not public(address)


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_and_those_that_carry_one_are_allowed(address: str) -> None:
    assert public(address)


def test_the_ipv4_address_an_ipv6_address_carries() -> None:
    def carried(text: str) -> list[str]:
        return [str(a) for a in embedded_ipv4(ipaddress.IPv6Address(text))]

    assert carried("::ffff:10.0.0.1") == ["10.0.0.1"]
    assert carried("64:ff9b::10.0.0.1") == ["10.0.0.1"]
    assert carried("2002:a00:1::") == ["10.0.0.1"]
    assert carried("2001:0:808:808::80ff:fffe") == ["8.8.8.8", "127.0.0.1"]
    assert carried("2606:4700::1111") == []


def test_every_block_of_the_list_is_refused_from_its_first_address_to_its_last() -> None:
    for block in BLOCKED:
        for address in (block.network_address, block.broadcast_address):
            assert not public(address), (block, address)


def test_addresses_are_judged_in_one_place() -> None:
    """Nothing else asks ``ipaddress`` whether an address is public or private."""
    judging = re.compile(r"\.is_(global|private)\b")
    found = [
        str(path.relative_to(ROOT))
        for layer in ("gateway", "channels", "slashgate")
        for path in (ROOT / layer).rglob("*.py")
        if judging.search(path.read_text(encoding="utf-8"))
    ]
    assert found == [], found
