"""The console's upstreams section: each server's state, with what its status changes told.

`UpstreamHistory` follows every upstream's status changes (`gateway.runtime.UpstreamSignals`):
how often a server came back up after it was up once (``reconnects``) and the last failure it
reported (``last_error``). It hears only the changes after it was built, so it is built with
the app, before the gateway starts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from gateway.gateway import Gateway
from toolsets.upstream.server import UpstreamStatus

__all__ = ["UpstreamHistory", "upstream_rows"]


@dataclass(slots=True)
class _Seen:
    ups: int = 0
    last_error: str | None = None
    last_error_at: float | None = None
    changed_at: float | None = None


class UpstreamHistory:
    """Reconnects and the last error of each upstream, from its status changes."""

    def __init__(self, gateway: Gateway) -> None:
        self._seen: dict[str, _Seen] = {}
        gateway.parts.signals.follow(status=self._status)

    async def _status(self, server: str, status: UpstreamStatus, detail: str) -> None:
        seen = self._seen.setdefault(server, _Seen())
        seen.changed_at = time.time()
        if status == "up":
            seen.ups += 1
        elif status in ("down", "reconnecting"):
            seen.last_error, seen.last_error_at = detail or status, seen.changed_at

    def of(self, server: str) -> dict[str, Any]:
        """What was heard of ``server``: reconnects, the last error and when."""
        seen = self._seen.get(server, _Seen())
        return {
            "reconnects": max(seen.ups - 1, 0),
            "last_error": seen.last_error,
            "last_error_at": seen.last_error_at,
            "changed_at": seen.changed_at,
        }


def _transport(gateway: Gateway, server: str) -> str:
    found = [s.transport for s in gateway.config.servers if s.name == server]
    return found[0] if found else "unknown"


async def upstream_rows(gateway: Gateway, history: UpstreamHistory) -> list[dict[str, Any]]:
    """Each upstream: status, transport, era, tool count, reconnects, last error, and the
    definitions of its tools waiting in quarantine."""
    quarantined: dict[str, list[str]] = {}
    for record in await gateway.pins.list():
        quarantined.setdefault(record.server, []).append(record.name)
    rows = []
    for name, up in sorted(gateway.upstreams.items()):
        rows.append(
            {
                "name": name,
                "status": up.status,
                "detail": up.detail,
                "transport": _transport(gateway, name),
                "era": up.protocol_version,
                "tools": len(up.tools),
                "quarantined": sorted(quarantined.get(name, [])),
                **history.of(name),
            }
        )
    return rows
