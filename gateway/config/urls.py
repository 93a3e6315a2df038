"""Outbound URLs judged without DNS: a webhook must not name a private, loopback, link-local or
metadata address (`gateway.events.urlcheck` judges the resolved addresses at delivery)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["UnsafeURL", "check_static", "is_public", "url_host"]


class UnsafeURL(ValueError):
    """The URL is malformed or points at an address that is not allowed."""


def is_public(address: str) -> bool:
    """Whether ``address`` is a globally routable unicast IP.

    Loopback, RFC 1918 private, carrier-grade NAT, link-local (cloud metadata at 169.254.169.254),
    unique-local ``fc00::/7`` (``fd00:ec2::254``), documentation, multicast and unspecified
    addresses are not; IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def url_host(url: str) -> str:
    """The host of an ``http(s)`` URL.

    Raises:
        UnsafeURL: it is not an ``http(s)://host/...`` URL.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeURL(f"webhook URL must be http(s)://host/..., got {url!r}")
    return parts.hostname


def check_static(url: str, *, allow_private: bool) -> None:
    """Refuse what can be judged without DNS: the scheme, ``localhost``, IP literals.

    Raises:
        UnsafeURL: the URL is not acceptable.
    """
    host = url_host(url)
    if allow_private:
        return
    if host == "localhost" or host.endswith(".localhost"):
        raise UnsafeURL(f"{url!r} points at loopback; set allow_private: true to allow it")
    try:
        public = is_public(host)
    except ValueError:
        return  # a name: judged by `gateway.events.urlcheck.check_resolved` at delivery time
    if not public:
        raise UnsafeURL(
            f"{url!r} points at a non-public address; set allow_private: true to allow it"
        )
