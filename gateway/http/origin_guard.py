"""Host and Origin validation for every HTTP route (DNS rebinding and cross-site requests)."""

from __future__ import annotations

import fnmatch

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostOriginGuard"]


class HostOriginGuard:
    """``421`` for a Host not allowed, ``403`` for an Origin not allowed (absent Origin is fine)."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.app = app
        self.hosts = tuple(settings.allowed_hosts)
        self.origins = tuple(settings.allowed_origins)

    @staticmethod
    def _allowed(value: str, patterns: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatchcase(value, p) for p in patterns)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            host = headers.get("host", "")
            origin = headers.get("origin")
            if not self._allowed(host, self.hosts):
                await PlainTextResponse("Invalid Host header", 421)(scope, receive, send)
                return
            if origin is not None and not self._allowed(origin, self.origins):
                await PlainTextResponse("Invalid Origin header", 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)
