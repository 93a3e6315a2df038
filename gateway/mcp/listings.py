"""`Listings`: ``tools/list`` answered on the fast paths, the result serialized once per listing.

The chain's hide step keeps one filtered catalogue per ``(catalogue version, visibility key)``
(`toolsets.filtered.FilteredToolset`, keyed by `policies.PolicyDecider.visibility_key`: the
principal's id, roles and tenant, the policy version and what of the session the policy reads)
and hands out the same dict while that key holds. The wire form of a listing is cached against
that very dict, by identity (held, so its id is never reused) and the protocol version: whatever
the listing depends on, a new catalogue, a policy reload or a session gate gives a new dict and
so a new serialization. Nothing here decides who sees what; `Gateway.tools` does, as for the SDK.

The result is shaped as the SDK's runner shapes it (cache hints, the version's surface,
``resultType`` and the ``serverInfo`` stamp on 2026-07-28), so both paths answer alike;
``tests/gateway/mcp/test_list_cache.py`` compares them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.caching import apply_cache_hint
from mcp_types import SERVER_INFO_META_KEY
from mcp_types import methods as sdk_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from gateway.mcp.raw_calls import RequestId, plain_params
from gateway.mcp.server import GatewayServer
from toolsets import jsonwire
from toolsets.context import CallContext
from toolsets.tooldef import ToolDef

__all__ = ["Listings", "listing_id"]

METHOD = "tools/list"
MAX_CACHED = 256
"""Serialized listings kept (each holds its listing); all are dropped when full."""


def listing_id(message: Mapping[str, Any]) -> RequestId | None:
    """The id of a ``tools/list`` request the fast paths may answer: no cursor, no progress
    token, no log level; None for anything else (the SDK answers it)."""
    if message.get("method") != METHOD:
        return None
    return plain_params(message, frozenset({"_meta"}))


@dataclass(frozen=True, slots=True)
class _Serialized:
    listing: Mapping[str, ToolDef]
    result: bytes


class Listings:
    """Answers ``tools/list`` for one downstream server (see the module docstring)."""

    def __init__(self, server: GatewayServer) -> None:
        self._server = server
        self._tools = server.downstream.gateway.tools
        self._catalogue = server.downstream.catalogue
        self._cache: dict[tuple[int, str], _Serialized] = {}

    async def answer(self, request_id: RequestId, ctx: CallContext, version: str) -> bytes:
        """The whole JSON-RPC response listing what ``ctx`` may see, for ``version``.

        Raises:
            Exception: whatever the listing raised (the caller hands the request to the SDK,
                which answers the error).
        """
        listing = await self._tools(ctx)
        key = (id(listing), version)
        entry = self._cache.get(key)
        if entry is None or entry.listing is not listing:
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            entry = self._cache[key] = _Serialized(listing, self._serialize(listing, version))
        head = b'{"jsonrpc":"2.0","id":%s,"result":' % jsonwire.dumps(request_id)
        return head + entry.result + b"}"

    def _serialize(self, listing: dict[str, ToolDef], version: str) -> bytes:
        """The ``result`` member, as the SDK's runner writes a `Downstream.list_tools` answer."""
        result = types.ListToolsResult(tools=self._catalogue.tools(listing))
        hint = self._server.cache_hints.get(METHOD)
        if hint is not None:
            result = apply_cache_hint(result, hint)
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = sdk_methods.serialize_server_result(METHOD, version, dumped)
        if version in MODERN_PROTOCOL_VERSIONS:
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            meta = dumped.get("_meta") or {}
            dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: self._server.server_info_stamp}
        return jsonwire.dumps(dumped)
