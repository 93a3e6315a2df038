"""The approvals web page at ``/approvals`` and the operator console at ``/console``: static
files, strict security headers."""

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

_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


def _static(path: str, name: str) -> Route:
    body = resources.files("gateway.http.web").joinpath(name).read_bytes()
    media_type = _MEDIA_TYPES[name[name.rindex(".") :]]

    async def endpoint(request: Request) -> Response:
        return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

    return Route(path, endpoint, methods=["GET"])


def _assets() -> list[str]:
    """The page's scripts (ES modules, no build step) and style sheets."""
    names = (entry.name for entry in resources.files("gateway.http.web").iterdir())
    return sorted(n for n in names if n.endswith((".js", ".css")))


def web_routes() -> list[BaseRoute]:
    """Routes serving the approvals page (it talks to ``/api/approvals`` with a Bearer token)."""
    page = _static("/approvals", "approvals.html")
    console = _static("/console", "console.html")  # the operator console (gateway/api/console.py)
    names = _assets()
    assets = [_static(f"/{at}/{name}", name) for at in ("approvals", "console") for name in names]
    return [page, console, *assets]
