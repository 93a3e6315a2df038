"""The gateway's resource URIs: ``lockgate://{prefix}/{original-uri}``, reversible by design.

Every resource an upstream lists, every template, and every URI inside its results (resource
links and embedded resources in tool results and prompt messages) is served with its server's
prefix in front of it, the original kept verbatim after the first ``/``:

    file:///tmp/a.txt       on server ``files``  ->  lockgate://files/file:///tmp/a.txt
    file:///{path}          (a template)         ->  lockgate://files/file:///{path}

A prefix matches ``[a-z0-9][a-z0-9-]*`` (like a server name), so the first ``/`` after the
scheme always ends it, and a template keeps working: its variables sit in the verbatim part.

MCP Apps' UI resources keep their ``ui://`` scheme, which hosts require of a tool's
``_meta.ui.resourceUri``; the prefix becomes their first segment instead:

    ui://get-time/app.html  on server ``clock``  ->  ui://clock/get-time/app.html
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "SCHEME",
    "UI_SCHEME",
    "gateway_uri",
    "rewrite_block",
    "rewrite_blocks",
    "split_gateway_uri",
]

SCHEME = "lockgate://"
UI_SCHEME = "ui://"
_GATEWAY_URI = re.compile(r"(lockgate|ui)://([a-z0-9][a-z0-9-]*)/(.+)", re.DOTALL)
_LINKING = frozenset({"resource_link", "resource"})


def gateway_uri(prefix: str, uri: str) -> str:
    """The URI the gateway serves for ``uri`` of the server with ``prefix``."""
    if uri.startswith(UI_SCHEME):
        return f"{UI_SCHEME}{prefix}/{uri.removeprefix(UI_SCHEME)}"
    return f"{SCHEME}{prefix}/{uri}"


def split_gateway_uri(uri: str) -> tuple[str, str] | None:
    """``(prefix, original URI)`` of a gateway URI; None when ``uri`` is not one."""
    match = _GATEWAY_URI.fullmatch(uri)
    if match is None:
        return None
    if match[1] == "ui":
        return match[2], f"{UI_SCHEME}{match[3]}"
    return match[2], match[3]


def rewrite_block(block: Mapping[str, Any], prefix: str) -> Mapping[str, Any]:
    """A content block (MCP wire form) whose resource URI, if it has one, is the gateway's:
    a ``resource_link``'s ``uri``, an embedded ``resource``'s ``resource.uri``. Other blocks,
    and malformed ones, come back as they are."""
    kind = block.get("type")
    if kind == "resource_link" and isinstance(block.get("uri"), str):
        return {**block, "uri": gateway_uri(prefix, block["uri"])}
    resource = block.get("resource")
    if (
        kind == "resource"
        and isinstance(resource, Mapping)
        and isinstance(resource.get("uri"), str)
    ):
        return {**block, "resource": {**resource, "uri": gateway_uri(prefix, resource["uri"])}}
    return block


def rewrite_blocks(blocks: Sequence[Any], prefix: str) -> list[Any] | None:
    """``blocks`` with every resource URI rewritten (see `rewrite_block`); None when none has one
    (the common case costs one pass and no copy)."""
    if not any(isinstance(b, Mapping) and b.get("type") in _LINKING for b in blocks):
        return None
    return [rewrite_block(b, prefix) if isinstance(b, Mapping) else b for b in blocks]
