"""Outbound URL checks: webhooks must not reach private, loopback, link-local, metadata IPs."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import anyio

__all__ = ["UnsafeURL", "check_resolved", "check_static", "is_public"]


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


def _host(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UnsafeURL(f"webhook URL must be http(s)://host/..., got {url!r}")
    return parts.hostname


def check_static(url: str, *, allow_private: bool) -> None:
    """Refuse what can be judged without DNS: the scheme, ``localhost``, IP literals.

    Raises:
        UnsafeURL: the URL is not acceptable.
    """
    host = _host(url)
    if allow_private:
        return
    if host == "localhost" or host.endswith(".localhost"):
        raise UnsafeURL(f"{url!r} points at loopback; set allow_private: true to allow it")
    try:
        public = is_public(host)
    except ValueError:
        return  # a name: judged by `check_resolved` at delivery time
    if not public:
        raise UnsafeURL(
            f"{url!r} points at a non-public address; set allow_private: true to allow it"
        )


async def check_resolved(url: str, *, allow_private: bool) -> None:
    """Resolve the URL's host and refuse it if any address is not public.

    Raises:
        UnsafeURL: the URL is not acceptable.
        OSError: the name does not resolve (worth retrying).
    """
    check_static(url, allow_private=allow_private)
    if allow_private:
        return
    host = _host(url)
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        if not is_public(address):
            raise UnsafeURL(f"{host!r} resolves to non-public address {address}")
