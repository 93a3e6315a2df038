"""The credentials benchmark's upstream: ``echo`` behind bearer JWT validation, built with the
MCP SDK's resource-server support (`mcp.server.auth`), as an OAuth-protected server is.

Run as ``python bench/protected_upstream.py --http PORT`` with the PEM public key in
``LOCKGATE_BENCH_JWT_KEY``. Every request's bearer token is checked (RS256 signature against that
key, issuer `ISSUER`, ``aud`` = this server's URL, expiry); a request without a valid one is
answered ``401`` with the RFC 9728 ``WWW-Authenticate`` challenge. No authorization server runs:
the bench signs the tokens itself (`mint`), so every mode of the bench pays the same validation.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

__all__ = ["ISSUER", "KEY_VAR", "SigningKey", "build"]

ISSUER = "https://issuer.bench.invalid"
"""The issuer the tokens name (never contacted: nothing is refreshed during a run)."""
KEY_VAR = "LOCKGATE_BENCH_JWT_KEY"


class SigningKey:
    """A fresh RSA key: the bench signs access tokens with it, the upstream checks them."""

    def __init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    @property
    def public_pem(self) -> str:
        public = self._key.public_key()
        encoded = public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return encoded.decode("ascii")

    def mint(self, subject: str, audience: str, *, lifetime: float = 86400.0) -> str:
        """An access token for ``subject`` at the upstream ``audience``, valid ``lifetime`` s."""
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "sub": subject,
            "aud": audience,
            "client_id": "lockgate-bench",
            "scope": "echo",
            "iat": now,
            "exp": now + int(lifetime),
        }
        return jwt.encode(claims, self._key, algorithm="RS256")


class Verifier:
    """The SDK's `TokenVerifier`: an RS256 JWT from `ISSUER` for ``audience``."""

    def __init__(self, public_pem: str, audience: str) -> None:
        self.key, self.audience = public_pem, audience

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims: dict[str, Any] = jwt.decode(
                token, self.key, algorithms=["RS256"], audience=self.audience, issuer=ISSUER
            )
        except jwt.PyJWTError:
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.audience,
            subject=str(claims["sub"]),
            claims=claims,
        )


def build(public_pem: str, url: str) -> MCPServer:
    """The protected server at ``url`` (its resource identifier), trusting ``public_pem``."""
    auth = AuthSettings(issuer_url=ISSUER, resource_server_url=url, validate_token_resource=True)
    verifier = Verifier(public_pem, url)
    server = MCPServer(
        "bench-protected", version="1.0", log_level="WARNING", auth=auth, token_verifier=verifier
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--http", type=int, required=True, help="serve on this port")
    args = parser.parse_args()
    url = f"http://127.0.0.1:{args.http}/mcp"
    app = build(os.environ[KEY_VAR], url).streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
