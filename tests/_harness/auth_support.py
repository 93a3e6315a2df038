"""Helpers of the JWT identity suite: signing keys made in the test, an identity provider's
JWKS served on 127.0.0.1, tokens, and the gateway config that trusts them.

Imported by module name (``import auth_support``): pytest puts this directory on ``sys.path``.
Every peer is real: the JWKS is a Starlette app under uvicorn, tokens are signed with
PyJWT, and the gateway is the real one (`Gateway.from_config` + `build_app`).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from events_e2e_support import local_config
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from support import serve_asgi

AUDIENCE = "https://lockgate.test/mcp"
REALM = "/realms/acme"
"""The identity provider's issuer is its base URL plus this path; its JWKS is under it."""

POLICY = """\
version: 1
defaults:
  effect: allow
  approval: {approvers: ["role:ops"], hold: 50ms, decisions: [approve, deny]}
rules:
  - id: held-for-ops
    tools: [local__held]
    effect: ask
  - id: pay-is-for-finance
    tools: [local__pay]
    principals: ["!role:finance"]
    effect: deny
    message: Only finance may pay.
  - id: frozen-department
    tools: [local__free]
    when: '"dept" in principal.claims && principal.claims.dept == "frozen"'
    effect: deny
    message: The frozen department may not call.
"""
"""``local__free`` runs (unless the caller's ``dept`` claim says ``frozen``), ``local__held``
waits for an ``ops`` approver, ``local__pay`` is refused to anyone without the ``finance``
role."""

SCOPES = {
    "agent": "lockgate:call",
    "approver": "lockgate:approve",
    "subscriber": "lockgate:events",
    "worker": "lockgate:work",
}
STATIC_ISSUER = "https://ci.lockgate.test"
JWK_ISSUER = "https://ed.lockgate.test"
HMAC_ISSUER = "https://hmac.lockgate.test"
HMAC_SECRET = "a shared HMAC secret of at least 32 bytes"
MAPPED_ISSUER = "https://mapped.lockgate.test"


@dataclass(frozen=True)
class SigningKey:
    """A private key made in the test, with its ``kid`` and algorithm."""

    kid: str
    alg: str
    private: Any

    def jwk(self) -> dict[str, Any]:
        """The public half as a JWK."""
        public = self.private.public_key()
        algorithm = {"RS": RSAAlgorithm, "ES": ECAlgorithm, "Ed": OKPAlgorithm}[self.alg[:2]]
        jwk: dict[str, Any] = algorithm.to_jwk(public, as_dict=True)
        return {**jwk, "kid": self.kid, "use": "sig", "alg": self.alg}

    def pem(self) -> str:
        """The public half as PEM."""
        public = self.private.public_key()
        encoding, format = (
            serialization.Encoding.PEM,
            serialization.PublicFormat.SubjectPublicKeyInfo,
        )
        return str(public.public_bytes(encoding, format).decode())


@functools.cache
def rsa_key(kid: str) -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))


@functools.cache
def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


@functools.cache
def ed_key(kid: str) -> SigningKey:
    return SigningKey(kid, "EdDSA", ed25519.Ed25519PrivateKey.generate())


def mint(key: SigningKey | str | None, issuer: str, *, lifetime: int = 300, **claims: Any) -> str:
    """A JWT from ``issuer`` for `AUDIENCE`, signed with ``key`` (a string: an HS256 secret;
    None: ``alg: none``).

    ``claims`` add to or replace the defaults (``sub``, ``iat``, ``exp``); a None value drops one.
    """
    now = int(time.time())
    payload = {"iss": issuer, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + lifetime}
    payload = {k: v for k, v in (payload | claims).items() if v is not None}
    if key is None:
        return jwt.encode(payload, None, algorithm="none")
    if isinstance(key, str):
        return jwt.encode(payload, key, algorithm="HS256")
    return jwt.encode(payload, key.private, algorithm=key.alg, headers={"kid": key.kid})


def scoped(*classes: str) -> str:
    """The ``scope`` claim earning ``classes`` with the identity provider."""
    return " ".join(SCOPES[c] for c in classes)


@dataclass
class Idp:
    """An identity provider's JWKS endpoint: what it publishes, and how often it was asked."""

    keys: list[SigningKey] = field(default_factory=list)
    fetches: int = 0
    failing: bool = False
    max_age: int | None = None
    document: dict[str, Any] | None = None
    """Served instead of the JWK set of `keys` (a broken or hostile one)."""

    def app(self) -> Starlette:
        async def certs(request: Request) -> Response:
            self.fetches += 1
            if self.failing:
                return JSONResponse({"error": "down for maintenance"}, status_code=503)
            headers = {} if self.max_age is None else {"Cache-Control": f"max-age={self.max_age}"}
            document = self.document or {"keys": [k.jwk() for k in self.keys]}
            return JSONResponse(document, headers=headers)

        return Starlette(routes=[Route(f"{REALM}/certs", certs)])

    @contextlib.asynccontextmanager
    async def serve(self, port: int | None = None) -> AsyncIterator[str]:
        """Serve the JWKS; yields the issuer (the JWKS is at ``{issuer}/certs``)."""
        async with serve_asgi(self.app(), port) as base:
            yield base + REALM


@dataclass(frozen=True)
class Rig:
    """A running gateway, the provider it trusts, and a provider that is down at first."""

    base: str
    idp: Idp
    issuer: str
    late: Idp
    late_port: int
    late_issuer: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"


def idp_issuer(issuer: str, **extra: Any) -> dict[str, Any]:
    """``auth.jwt`` entry of an identity provider serving every class, each for its scope."""
    return {
        "issuer": issuer,
        "audience": AUDIENCE,
        "jwks_url": f"{issuer}/certs",
        "as": list(SCOPES),
        "require": {c: f"scope:{s}" for c, s in SCOPES.items()},
        "roles_claim": "realm_access.roles",
        "tenant_claim": "org",
        "id_prefix": "acme:",
        "jwks_min_refresh": 0,
        **extra,
    }


def mapped_issuer() -> dict[str, Any]:
    """An agents' issuer with a static EC JWK that renames roles (``payments`` is lockgate's
    ``finance``, others are dropped), puts every token in tenant ``acme`` and shows policies
    the ``dept`` claim."""
    return {
        "issuer": MAPPED_ISSUER,
        "audience": AUDIENCE,
        "key": ec_key("mapped").jwk(),
        "as": ["agent"],
        "id_prefix": "mapped:",
        "roles_claim": "groups",
        "role_map": {"payments": "finance"},
        "tenant": "acme",
        "claims": ["dept"],
    }


def suite_config(directory: Path, issuers: list[dict[str, Any]], **auth: Any) -> Path:
    """The suite's gateway: local tools, `POLICY`, and ``issuers`` beside one static agent."""
    static = {"agents": [{"id": "agent:static", "token": "static-agent-token"}], **auth}
    return local_config(directory, POLICY, {**static, "jwt": issuers})


def static_issuers() -> list[dict[str, Any]]:
    """Issuers with keys in the config: an EC public key in PEM (agents), an Ed25519 JWK
    (subscribers) and an HMAC secret (workers)."""
    return [
        {
            "issuer": STATIC_ISSUER,
            "audience": [AUDIENCE, "https://other.test"],
            "key": ec_key("ci").pem(),
            "as": ["agent"],
            "id_prefix": "ci:",
        },
        {
            "issuer": JWK_ISSUER,
            "audience": AUDIENCE,
            "key": ed_key("ed").jwk(),
            "as": ["subscriber"],
            "id_prefix": "ed:",
        },
        {
            "issuer": HMAC_ISSUER,
            "audience": AUDIENCE,
            "secret": HMAC_SECRET,
            "as": ["worker"],
            "id_prefix": "hs:",
        },
    ]
