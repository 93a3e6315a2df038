"""OAuth 2.0 Protected Resource Metadata (RFC 9728) and the Bearer challenges pointing at it.

With JWT issuers configured, ``/.well-known/oauth-protected-resource/mcp`` describes ``/mcp``
(for agents) and ``/.well-known/oauth-protected-resource`` the REST API (for approvers,
subscribers and workers): the resource URL, the issuers of those classes as
``authorization_servers``, ``bearer_methods_supported`` and the scopes that earn those classes
(for ``/mcp``, with the scopes the policy's rules require of tool calls).
Every 401 carries ``WWW-Authenticate: Bearer resource_metadata="..."`` and the ``scope`` needed
(and ``error="invalid_token"`` with a description when a token was given), as the MCP
authorization spec asks. The resource URL is ``auth.public_url`` or, when
unset, the scheme and Host of the request (Host is checked against the allow-list first).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final, Protocol
from urllib.parse import urlsplit

from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Scope

from gateway.config.jwt import CredentialClass, JwtIssuerConfig

__all__ = ["WELL_KNOWN", "ResourceMetadata", "ToolScopes"]

WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"
_UNSAFE: Final = re.compile(r'[^\x20-\x7e]|["\\]')


def _quoted(value: str) -> str:
    """A header quoted-string: printable ASCII without quotes or backslashes."""
    return '"' + _UNSAFE.sub("'", value) + '"'


def _is_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in {"http", "https"} and bool(parts.netloc)


RESOURCES: Final[dict[str, frozenset[CredentialClass]]] = {
    "": frozenset({"approver", "subscriber", "worker"}),
    "/mcp": frozenset({"agent"}),
}
"""Each resource (its path) and the credential classes that use it: ``/mcp`` is the agents',
the rest (the REST API) everyone else's. An MCP client learns only the agents' issuers and
scopes, so it never asks for a scope that approves."""


def _refusal(status: int, error: str, description: str, challenge: str) -> JSONResponse:
    """A refusal: ``error`` and its ``description`` in the body, ``challenge`` as the header."""
    body = {"error": error, "error_description": description, "detail": description}
    return JSONResponse(body, status_code=status, headers={"WWW-Authenticate": challenge})


class ToolScopes(Protocol):
    """The scopes the policy's rules require of tool calls (`policies.held_scopes.HeldScopes`)."""

    @property
    def all(self) -> frozenset[str]:
        """Every one of them (the current policy's)."""
        ...


class ResourceMetadata:
    """The gateway as an OAuth protected resource.

    Args:
        public_url: The gateway's public URL (else each request's base URL).
        issuers: The configured JWT issuers.
        tool_scopes: The scopes tool calls may need (``/mcp``'s ``scopes_supported`` lists
            them beside the agent scopes, so a client can ask for them up front).
    """

    def __init__(
        self,
        public_url: str | None,
        issuers: Sequence[JwtIssuerConfig],
        tool_scopes: ToolScopes | None = None,
    ) -> None:
        self.public_url = public_url.rstrip("/") if public_url else None
        self._issuers = tuple(issuers)
        self._tool_scopes = tool_scopes

    def supported(self, path: str) -> list[str]:
        """The ``scopes_supported`` of the resource at ``path``: the scopes earning its
        classes, and for ``/mcp`` those the policy requires of tool calls."""
        scopes = set(self.scopes_for(*RESOURCES[path]))
        if path == "/mcp" and self._tool_scopes is not None:
            scopes |= self._tool_scopes.all
        return sorted(scopes)

    def servers(self, path: str) -> list[str]:
        """The issuers (those that are URLs) of the classes using the resource at ``path``."""
        classes = RESOURCES[path]
        return [i.issuer for i in self._issuers if _is_url(i.issuer) and classes & set(i.as_)]

    def scopes_for(self, *classes: CredentialClass) -> list[str]:
        """The scopes that earn any of ``classes`` (with any issuer)."""
        return sorted(
            {
                value.removeprefix("scope:")
                for issuer in self._issuers
                for cls, value in issuer.require.items()
                if cls in classes and value.startswith("scope:")
            }
        )

    def resource(self, scope: Scope, path: str) -> str:
        """The URL of the resource at ``path`` (``""``: the gateway, ``"/mcp"``)."""
        base = self.public_url or str(Request(scope).base_url).rstrip("/")
        return base + path

    def metadata_url(self, scope: Scope, path: str) -> str:
        """Where the metadata of the resource at ``path`` is served."""
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource(scope, path))))

    def routes(self) -> list[Route]:
        """The well-known route of each resource with an issuer to name (the MCP spec asks
        for at least one authorization server)."""
        return [
            Route(WELL_KNOWN + path, self._endpoint(path), methods=["GET"])
            for path in RESOURCES
            if self.servers(path)
        ]

    def _endpoint(self, path: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            document = ProtectedResourceMetadata.model_validate(  # URLs kept as written
                {
                    "resource": self.resource(request.scope, path),
                    "authorization_servers": self.servers(path),
                    "scopes_supported": self.supported(path) or None,
                    "bearer_methods_supported": ["header"],
                    "resource_name": "lockgate" + (" MCP" if path else ""),
                }
            )
            body = document.model_dump(mode="json", exclude_none=True)
            return JSONResponse(body, headers={"Cache-Control": "public, max-age=3600"})

        return endpoint

    def challenge(self, scope: Scope, path: str, params: Mapping[str, str | None]) -> str:
        """A ``WWW-Authenticate: Bearer`` value with ``params`` (None ones left out) and, when
        the resource has metadata, ``resource_metadata``."""
        parts = [f"{k}={_quoted(v)}" for k, v in params.items() if v is not None]
        if self.servers(path):
            parts.append(f"resource_metadata={_quoted(self.metadata_url(scope, path))}")
        return "Bearer " + ", ".join(['realm="lockgate"', *parts])

    def unauthorized(
        self, scope: Scope, path: str, *, presented: bool, description: str, scopes: Sequence[str]
    ) -> JSONResponse:
        """401: ``invalid_token`` with ``description`` when a token was given, else only the
        challenge (RFC 6750 3.1: no error code when no credentials were sent); ``scope``
        names ``scopes`` (the MCP spec: so a client asks for those and no more)."""
        error = "invalid_token" if presented else None
        params = {
            "error": error,
            "error_description": description if presented else None,
            "scope": " ".join(scopes) or None,
        }
        challenge = self.challenge(scope, path, params)
        return _refusal(401, error or "unauthorized", description, challenge)

    def insufficient_scope(
        self, scope: Scope, path: str, *, description: str, scopes: Sequence[str]
    ) -> JSONResponse:
        """403 ``insufficient_scope``, naming the scopes that would do (so a client can ask
        its authorization server for them)."""
        params = {
            "error": "insufficient_scope",
            "error_description": description,
            "scope": " ".join(scopes),
        }
        challenge = self.challenge(scope, path, params)
        return _refusal(403, "insufficient_scope", description, challenge)
