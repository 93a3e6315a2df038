"""An OAuth-protected upstream MCP server, built with the MCP SDK's resource-server support.

`mcp.server.auth`: a `TokenVerifier` validates the provider's JWT access tokens against its
JWKS with PyJWT (signature, issuer, expiry, ``aud`` = this server's URL), the SDK serves the
RFC 9728 protected resource metadata and answers a request without a valid token ``401`` with
``WWW-Authenticate: Bearer ... resource_metadata="..."`` (``403 insufficient_scope`` when the
token lacks a required scope). Tools: ``whoami`` (the token's subject, audience, client, scopes,
``act``), ``notes`` (the caller's own notes: per-user data) and ``add_note``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import jwt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from support import free_port, serve_asgi

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "upstreams"))

from echo_server import era_guard

NOTES = {"alice": ["alice: buy milk"], "bob": ["bob: call the bank"]}
"""The notes each user starts with (a copy per server)."""


@dataclass
class Seen:
    """What the upstream saw: the claims of every token it accepted, in order, and the raw
    tokens (to check none of them leaked anywhere)."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    refused: set[str] = field(default_factory=set)
    """Subjects whose (otherwise valid) tokens the upstream answers ``401``: a revoked grant."""


class JwksVerifier:
    """Validates the provider's JWTs: RS256 against its JWKS, its issuer, this audience."""

    def __init__(self, issuer: str, audience: str, seen: Seen) -> None:
        self.issuer, self.audience, self.seen = issuer, audience, seen
        self.jwks = jwt.PyJWKClient(f"{issuer}/jwks", cache_keys=True)

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            key = await anyio.to_thread.run_sync(self.jwks.get_signing_key_from_jwt, token)
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=["RS256"], audience=self.audience, issuer=self.issuer
            )
        except jwt.PyJWTError:
            return None
        if claims.get("sub") in self.seen.refused:
            return None
        self.seen.claims.append(claims)
        self.seen.tokens.append(token)
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=str(claims["sub"]),
            claims=claims,
        )


def _token(ctx: Context) -> AccessToken:
    user = ctx.request_context.request.user  # type: ignore[union-attr]
    assert isinstance(user, AuthenticatedUser)
    return user.access_token


def build(
    issuer: str, url: str, seen: Seen, *, era: str = "dual", required_scopes: Sequence[str] = ()
) -> MCPServer:
    """The protected server for resource ``url``, trusting ``issuer``."""
    auth = AuthSettings(
        issuer_url=issuer,
        resource_server_url=url,
        validate_token_resource=True,
        required_scopes=list(required_scopes) or None,
    )
    verifier = JwksVerifier(issuer, url, seen)
    server = MCPServer(
        "notes", version="1.0", log_level="WARNING", auth=auth, token_verifier=verifier
    )
    notes = {user: list(items) for user, items in NOTES.items()}

    @server.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who the bearer token says the caller is."""
        token = _token(ctx)
        claims = token.claims or {}
        return {
            "sub": token.subject,
            "aud": claims.get("aud"),
            "client_id": token.client_id,
            "scopes": token.scopes,
            "act": claims.get("act"),
            "protocol": ctx.request_context.protocol_version,
        }

    @server.tool()
    def my_notes(ctx: Context) -> list[str]:
        """The caller's own notes."""
        return notes.get(str(_token(ctx).subject), [])

    @server.tool()
    def add_note(text: str, ctx: Context) -> int:
        """Add a note to the caller's own notes; answers how many they have."""
        mine = notes.setdefault(str(_token(ctx).subject), [])
        mine.append(text)
        return len(mine)

    if era != "dual":
        server._lowlevel_server.middleware.insert(0, era_guard(era))
    return server


@dataclass(frozen=True)
class Upstream:
    """A running protected upstream: its MCP URL (also its resource identifier) and what it saw."""

    url: str
    seen: Seen

    @property
    def metadata_url(self) -> str:
        """Its RFC 9728 protected resource metadata."""
        base = self.url.removesuffix("/mcp")
        return f"{base}/.well-known/oauth-protected-resource/mcp"


@contextlib.asynccontextmanager
async def protected_upstream(
    issuer: str, *, era: str = "dual", required_scopes: Sequence[str] = ()
) -> AsyncIterator[Upstream]:
    """Serve the protected upstream in-process under uvicorn on 127.0.0.1 until the block ends.

    Args:
        issuer: the authorization server whose tokens it accepts.
        era: ``dual``, ``legacy`` (2025-11-25 only) or ``modern`` (2026-07-28 only).
        required_scopes: scopes every token must carry (``403 insufficient_scope`` otherwise).
    """
    port = free_port()
    url, seen = f"http://127.0.0.1:{port}/mcp", Seen()
    server = build(issuer, url, seen, era=era, required_scopes=required_scopes)
    async with serve_asgi(server.streamable_http_app(host="127.0.0.1"), port):
        yield Upstream(url, seen)
