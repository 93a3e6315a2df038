"""Outbound URL checks at delivery: a webhook's host must not resolve to a private, loopback,
link-local or metadata address (`gateway.config.urls` judges the URL as written)."""

from __future__ import annotations

import socket

import anyio

from gateway.config.urls import UnsafeURL, check_static, is_public, url_host

__all__ = ["check_resolved"]


async def check_resolved(url: str, *, allow_private: bool) -> None:
    """Resolve the URL's host and refuse it if any address is not public.

    Raises:
        UnsafeURL: the URL is not acceptable.
        OSError: the name does not resolve (worth retrying).
    """
    check_static(url, allow_private=allow_private)
    if allow_private:
        return
    host = url_host(url)
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        if not is_public(address):
            raise UnsafeURL(f"{host!r} resolves to non-public address {address}")
