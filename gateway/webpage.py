"""The approvals web page at ``/approvals``: static files, strict security headers."""

from __future__ import annotations

from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

__all__ = ["SECURITY_HEADERS", "web_routes"]

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_FILES = {
    "/approvals": ("approvals.html", "text/html; charset=utf-8"),
    "/approvals/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/approvals/app.css": ("app.css", "text/css; charset=utf-8"),
}


def _static(name: str, media_type: str) -> Route:
    body = resources.files("gateway.web").joinpath(name).read_bytes()
    path = next(p for p, (n, _) in _FILES.items() if n == name)

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

    return Route(path, endpoint, methods=["GET"])


def web_routes() -> list[BaseRoute]:
    """Routes serving the approvals page (it talks to ``/api/approvals`` with a Bearer token)."""
    return [_static(name, media) for name, media in _FILES.values()]
